#include "fastrank/feature_cv.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fastrank/errors.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank::cv {

namespace {

// Groups at least this large are handled on the calling thread with (threaded) BLAS; smaller
// ones in fastrank's threads with Eigen's kernels (no BLAS call from a worker thread).
constexpr Index kBlasGroup = 256;

[[noreturn]] void not_pd(const char* what) {
  throw LinAlgError(std::string(what) +
                    ": the p x p system X^T L X + alpha I is not numerically positive definite; increase alpha");
}

// Centred data in group order and the full-data system (header comment).
struct Centred {
  Index m = 0, p = 0, v = 0, ng = 0;
  Matrix Xt;    // p x m: column i = centred features of position i
  Matrix Yc;    // m x v: centred targets
  Matrix mu;    // p x ng: group means of the features
  Matrix A;     // p x p (lower triangle): sum_q c_q n_q Xc_q^T Xc_q + alpha I
  Matrix b;     // p x v
  IndexVector offsets;
  Vector weight;

  Index size(Index q) const { return offsets[q + 1] - offsets[q]; }
};

Centred centre(RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order, IndexVectorCRef offsets,
               VectorCRef weight, double alpha, int n_threads) {
  Centred c;
  c.m = Phi.rows();
  c.p = Phi.cols();
  c.v = Y.cols();
  c.ng = offsets.size() - 1;
  require(c.ng >= 1 && offsets[0] == 0 && offsets[c.ng] == c.m, "group offsets must run from 0 to m");
  require(order.size() == c.m && Y.rows() == c.m, "order and Y must have one entry per row of Phi");
  require(weight.size() == c.ng, "one pair weight per group");
  require(std::isfinite(alpha) && alpha > 0.0, "alpha must be finite and > 0");
  for (Index q = 0; q < c.ng; ++q) {
    require(offsets[q + 1] > offsets[q], "every group must contain at least one row");
    require(weight[q] >= 0.0 && std::isfinite(weight[q]), "pair weights must be finite and >= 0");
  }
  for (Index i = 0; i < c.m; ++i) require(order[i] >= 0 && order[i] < c.m, "order must index the rows");
  c.offsets = offsets;
  c.weight = weight;
  c.Xt.resize(c.p, c.m);
  c.Yc.resize(c.m, c.v);
  c.mu.resize(c.p, c.ng);
  Matrix St(c.p, c.m), Sy(c.m, c.v);  // rows scaled by sqrt(c_q n_q): A = St St^T, b = St Sy
  parallel_for(0, c.ng, n_threads, 16, [&](Index lo, Index hi) {
    for (Index q = lo; q < hi; ++q) {
      const Index o = offsets[q], n = c.size(q);
      Vector mx = Vector::Zero(c.p);
      Eigen::RowVectorXd my = Eigen::RowVectorXd::Zero(c.v);
      for (Index i = 0; i < n; ++i) {
        mx += Phi.row(order[o + i]).transpose();
        my += Y.row(order[o + i]);
      }
      mx /= static_cast<double>(n);
      my /= static_cast<double>(n);
      c.mu.col(q) = mx;
      const double s = std::sqrt(weight[q] * static_cast<double>(n));
      for (Index i = 0; i < n; ++i) {
        c.Xt.col(o + i) = Phi.row(order[o + i]).transpose() - mx;
        c.Yc.row(o + i) = Y.row(order[o + i]) - my;
        St.col(o + i) = s * c.Xt.col(o + i);
        Sy.row(o + i) = s * c.Yc.row(o + i);
      }
    }
  });
  c.A = Matrix::Zero(c.p, c.p);
  c.A.diagonal().setConstant(alpha);
  lapack::syrk_lower('N', c.p, c.m, 1.0, St.data(), c.p, 1.0, c.A.data(), c.p);
  c.b.resize(c.p, c.v);
  lapack::gemm('N', 'N', 1.0, St, Sy, 0.0, c.b);
  return c;
}

// Retrained predictions of group q's rows without the whole group, from its p x p system directly.
Matrix group_out_direct(const Centred& c, Index q) {
  const Index o = c.offsets[q], n = c.size(q);
  const double cn = c.weight[q] * static_cast<double>(n);
  const auto Xq = c.Xt.middleCols(o, n);
  Matrix A = c.A.selfadjointView<Eigen::Lower>();
  A.noalias() -= cn * Xq * Xq.transpose();
  Matrix bq = c.b;
  bq.noalias() -= cn * Xq * c.Yc.middleRows(o, n);
  Eigen::LLT<Matrix> llt(A);
  if (llt.info() != Eigen::Success) not_pd("leave-group-out");
  const Matrix w = llt.solve(bq);
  Matrix out = Xq.transpose() * w;
  out.rowwise() += c.mu.col(q).transpose() * w;
  return out;
}

}  // namespace

RowMatrix feature_leave_group_out(RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order,
                                  IndexVectorCRef offsets, VectorCRef weight, double alpha, int n_threads) {
  const Centred c = centre(Phi, Y, order, offsets, weight, alpha, n_threads);
  const Index m = c.m, p = c.p, v = c.v, ng = c.ng;
  Matrix L = c.A;
  if (!lapack::potrf_lower(L)) not_pd("leave-group-out");
  Matrix w = c.b;
  lapack::potrs_lower(L, w);
  Matrix g(m, v);  // centred full-data predictions Xc w
  lapack::gemm('T', 'N', 1.0, c.Xt, w, 0.0, g);
  const Matrix muw = c.mu.transpose() * w;  // ng x v
  Matrix nu = c.mu;                         // L^-1 mu_q
  lapack::trsm_lower_left('N', L, nu);
  Matrix Zt = c.Xt;  // L^-1 Xc^T: G_q = Z_q^T Z_q = Xc_q A^-1 Xc_q^T
  lapack::trsm_lower_left('N', L, Zt);
  RowMatrix out(m, v);
  auto one_group = [&](Index q) {
    const Index o = c.offsets[q], n = c.size(q);
    const double cn = c.weight[q] * static_cast<double>(n);
    Matrix pred = g.middleRows(o, n);
    pred.rowwise() += muw.row(q);
    if (n >= 2 && cn > 0.0) {
      bool done = false;
      if (n < p) {  // Woodbury on the n x n block (header comment, D = c_q n_q I)
        const auto Zq = Zt.middleCols(o, n);
        Matrix G(n, n);
        G.noalias() = Zq.transpose() * Zq;
        const Vector kappa = Zq.transpose() * nu.col(q);
        const auto Yq = c.Yc.middleRows(o, n);
        Matrix r = g.middleRows(o, n);
        r.noalias() -= cn * G * Yq;
        Matrix N = -cn * G;
        N.diagonal().array() += 1.0;
        Eigen::LLT<Matrix> llt(N);
        // I - c n G is SPD (A' is); a tiny pivot means the group dominates some direction, where the
        // direct p x p retraining is the better-conditioned form.
        if (llt.info() == Eigen::Success && llt.matrixLLT().diagonal().minCoeff() > 1e-4) {
          Matrix t = cn * llt.solve(r);
          t.noalias() -= cn * Yq;
          pred.noalias() += G * t;  // (G + 1 kappa^T) t
          pred.rowwise() += kappa.transpose() * t;
          done = true;
        }
      }
      if (!done) pred = group_out_direct(c, q);
    }
    for (Index i = 0; i < n; ++i) out.row(order[o + i]) = pred.row(i);
  };
  std::vector<Index> small, large;
  for (Index q = 0; q < ng; ++q) (c.size(q) >= kBlasGroup ? large : small).push_back(q);
  parallel_for(0, static_cast<Index>(small.size()), n_threads, 8, [&](Index lo, Index hi) {
    for (Index k = lo; k < hi; ++k) one_group(small[static_cast<size_t>(k)]);
  });
  for (Index q : large) one_group(q);
  return out;
}

RowMatrix feature_leave_pair_out(RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order,
                                 IndexVectorCRef offsets, VectorCRef weight, double alpha, PairMatrixCRef pairs,
                                 int n_threads) {
  const Centred c = centre(Phi, Y, order, offsets, weight, alpha, n_threads);
  const Index m = c.m, p = c.p, v = c.v, ng = c.ng, np = pairs.rows();
  require(pairs.cols() == 2, "pairs must have two columns");
  IndexVector grp(m);
  for (Index q = 0; q < ng; ++q) grp.segment(c.offsets[q], c.size(q)).setConstant(q);
  std::vector<Index> count(static_cast<size_t>(ng), 0);
  for (Index k = 0; k < np; ++k) {
    const Index a = pairs(k, 0), b = pairs(k, 1);
    require(a >= 0 && a < m && b >= 0 && b < m && a != b, "pair positions must be distinct rows");
    require(grp[a] == grp[b], "both rows of a pair must lie in one group");
    ++count[static_cast<size_t>(grp[a])];
  }
  // Per group: the (n-2)/n-scaled system A_0, its factor L_0, and per row z = L_0^-1 xc, kappa,
  // the centred and full predictions of (A_0, b_0).
  Matrix Zt = Matrix::Zero(p, m), g = Matrix::Zero(m, v), f = Matrix::Zero(m, v);
  Vector kappa = Vector::Zero(m);
  std::vector<Matrix> M(static_cast<size_t>(ng));  // dense blocks Z_q^T Z_q (lower) where worthwhile
  auto one_group = [&](Index q, bool blas) {
    const Index o = c.offsets[q], n = c.size(q);
    if (count[static_cast<size_t>(q)] == 0) return;
    const double cq = c.weight[q];
    const auto Xq = c.Xt.middleCols(o, n);
    Matrix L = c.A;
    Matrix b = c.b;
    if (blas) {
      lapack::syrk_lower('N', p, n, -2.0 * cq, Xq.data(), p, 1.0, L.data(), p);
      lapack::gemm('N', 'N', -2.0 * cq, Xq, c.Yc.middleRows(o, n), 1.0, b);
      if (!lapack::potrf_lower(L)) not_pd("leave-pair-out");
      L.triangularView<Eigen::StrictlyUpper>().setZero();
    } else {
      L.selfadjointView<Eigen::Lower>().rankUpdate(Xq, -2.0 * cq);
      b.noalias() -= 2.0 * cq * Xq * c.Yc.middleRows(o, n);
      Eigen::LLT<Eigen::Ref<Matrix>> llt(L);
      if (llt.info() != Eigen::Success) not_pd("leave-pair-out");
      L.triangularView<Eigen::StrictlyUpper>().setZero();
    }
    const auto Lv = L.triangularView<Eigen::Lower>();
    Matrix w = Lv.solve(b);
    L.transpose().triangularView<Eigen::Upper>().solveInPlace(w);
    auto Zq = Zt.middleCols(o, n);
    Zq = Xq;
    if (blas) {
      lapack::trsm_lower_left('N', L, Zq);
    } else {
      Lv.solveInPlace(Zq);
    }
    const Vector nu = Lv.solve(c.mu.col(q));
    kappa.segment(o, n).noalias() = Zq.transpose() * nu;
    if (blas) {
      Matrix gq(n, v);
      lapack::gemm('T', 'N', 1.0, Xq, w, 0.0, gq);
      g.middleRows(o, n) = gq;
    } else {
      g.middleRows(o, n).noalias() = Xq.transpose() * w;
    }
    f.middleRows(o, n) = g.middleRows(o, n);
    f.middleRows(o, n).rowwise() += c.mu.col(q).transpose() * w;
    const double dn = static_cast<double>(n);
    const bool dense = 16.0 * static_cast<double>(count[static_cast<size_t>(q)]) >= dn * dn && dn <= 5792.0;
    if (dense) {
      Matrix Mq(n, n);
      if (blas) {
        lapack::syrk_lower('T', n, p, 1.0, Zq.data(), p, 0.0, Mq.data(), n);
      } else {
        Mq.noalias() = Zq.transpose() * Zq;
      }
      M[static_cast<size_t>(q)] = std::move(Mq);
    }
  };
  std::vector<Index> small;
  for (Index q = 0; q < ng; ++q) {
    if (c.size(q) >= kBlasGroup) {
      one_group(q, true);
    } else {
      small.push_back(q);
    }
  }
  parallel_for(0, static_cast<Index>(small.size()), n_threads, 8, [&](Index lo, Index hi) {
    for (Index k = lo; k < hi; ++k) one_group(small[static_cast<size_t>(k)], false);
  });
  Vector zz(m);  // G_aa = |z_a|^2
  for (Index i = 0; i < m; ++i) zz[i] = Zt.col(i).squaredNorm();
  RowMatrix out(np, 2 * v);
  parallel_for(0, np, n_threads, 4096, [&](Index lo, Index hi) {
    for (Index k = lo; k < hi; ++k) {
      const Index a = pairs(k, 0), b = pairs(k, 1), q = ng == 1 ? 0 : grp[a], o = c.offsets[q];
      const double cq = c.weight[q], kk = static_cast<double>(c.offsets[q + 1] - o - 2);
      const double gaa = zz[a], gbb = zz[b];
      const Matrix& Mq = M[static_cast<size_t>(q)];
      const double gab = Mq.size() == 0 ? Zt.col(a).dot(Zt.col(b))
                                         : (a > b ? Mq(a - o, b - o) : Mq(b - o, a - o));
      // D = c [[k+1, 1], [1, k+1]];  H = (I - D G)^-1 D
      const double d0 = cq * (kk + 1.0), d1 = cq;
      const double n00 = 1.0 - (d0 * gaa + d1 * gab), n01 = -(d0 * gab + d1 * gbb);
      const double n10 = -(d1 * gaa + d0 * gab), n11 = 1.0 - (d1 * gab + d0 * gbb);
      const double inv_det = 1.0 / (n00 * n11 - n01 * n10);
      const double i00 = n11 * inv_det, i01 = -n01 * inv_det, i10 = -n10 * inv_det, i11 = n00 * inv_det;
      const double h00 = i00 * d0 + i01 * d1, h01 = i00 * d1 + i01 * d0;
      const double h10 = i10 * d0 + i11 * d1, h11 = i10 * d1 + i11 * d0;
      const double ka = kappa[a], kb = kappa[b];
      for (Index j = 0; j < v; ++j) {
        const double ya = c.Yc(a, j), yb = c.Yc(b, j);
        const double dya = d0 * ya + d1 * yb, dyb = d1 * ya + d0 * yb;
        const double ra = g(a, j) - (gaa * dya + gab * dyb), rb = g(b, j) - (gab * dya + gbb * dyb);
        const double ta = h00 * ra + h01 * rb - dya, tb = h10 * ra + h11 * rb - dyb;
        out(k, j) = f(a, j) + (gaa + ka) * ta + (gab + kb) * tb;
        out(k, v + j) = f(b, j) + (gab + ka) * ta + (gbb + kb) * tb;
      }
    }
  });
  return out;
}

}  // namespace fastrank::cv
