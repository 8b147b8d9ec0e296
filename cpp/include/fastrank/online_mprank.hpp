// On-line (gradient) MPRank, Cortes, Mohri & Rastogi section 2.5.
//
// The dual of MPRank (eq. 16) maximises  -a' Kt a - (m / 2C) a'a + 2 a' yt  with Kt the centred
// kernel matrix and yt = y - mean(y); its maximiser solves (Kt + m/(2C) I) a = yt, which is the
// batch solution of eq. 13 (h(x) = sum_i a_i (K(x, x_i) - mean_k K(x, x_k))).
// Two iterations:
//  * sequential (the paper's pseudo-code, points processed one by one):
//      for i = 1..m:  a_i <- a_i + eta [2 (yt_i - sum_j a_j Kt_ij) - (m / C) a_i]
//    kept O(m) per point by maintaining v = Kt a;
//  * gradient: a <- a + eta [2 (yt - Kt a) - (m / C) a]  (one BLAS matrix-vector product per pass).
// A pass is one sweep over the m points; iteration stops when the dual's gradient
// g = 2 (yt - Kt a) - (m / C) a is below 2 `tol` |Kt a|, or C |Kt g| / m is below `tol` |Kt a| (either holds the
// training predictions within about tol of the fixed point), or g is at its rounding level, or after `max_iter` passes.
// The primal cost F = a'Kt a + (2C/m) ||Kt a - yt||^2 (eq. 15) of every pass is recorded.
// With a linear kernel, Kt = Xc Xc^T for the centred features Xc (m x d): mprank_online_linear runs the same
// iterations without forming Kt, keeping w = Xc^T a (a pass costs O(m d) instead of O(m^2)).
#pragma once
#include <vector>

#include "fastrank/types.hpp"

namespace fastrank {

struct MPRankOnlineResult {
  int n_iter = 0;
  bool converged = false;
  std::vector<double> costs;  // primal cost after each pass (costs[0]: at the starting point)
};

MPRankOnlineResult mprank_online(MatrixCRef Kt, VectorCRef yt, double C, double eta, bool sequential,
                                 int max_iter, double tol, Eigen::Ref<Vector> alpha);
MPRankOnlineResult mprank_online_linear(RowMatrixCRef Xc, VectorCRef yt, double C, double eta, bool sequential,
                                        int max_iter, double tol, Eigen::Ref<Vector> alpha);

}  // namespace fastrank
