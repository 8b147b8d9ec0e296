#include "fastrank/tridiag_path.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "fastrank/errors.hpp"
#include "fastrank/rankrls.hpp"
#include "fastrank/lapack.hpp"

namespace fastrank {

namespace {

// Number of eigenvalues of T below x (Sturm sequence of the LDL^T pivots of T - x I).
Index sturm_count(const Vector& d, const Vector& e, double x, double pivmin) {
  Index count = 0;
  double q = d[0] - x;
  if (std::abs(q) < pivmin) q = -pivmin;
  if (q < 0) ++count;
  for (Index i = 1; i < d.size(); ++i) {
    q = d[i] - x - e[i - 1] * e[i - 1] / q;
    if (std::abs(q) < pivmin) q = -pivmin;
    if (q < 0) ++count;
  }
  return count;
}

[[noreturn]] void not_positive_definite(double alpha, bool primal = false) {
  if (primal)
    throw LinAlgError("the linear RankRLS system X^T L X + alpha I is singular to working precision for alpha=" +
                      format_number(alpha) + ": the columns of X are linearly dependent over the pairs (duplicate or "
                      "constant columns) or on very different scales (standardise them: fastrank.preprocessing, "
                      "fastrank train --normalize); drop the dependent columns or increase alpha");
  throw LinAlgError("the RankRLS system is not numerically positive definite for alpha=" + format_number(alpha) +
                    " (alpha is too small relative to the kernel's scale, or the kernel is not positive "
                    "semidefinite); increase alpha");
}

}  // namespace

double tridiagonal_max_eigenvalue(const Vector& d, const Vector& e) {
  const Index n = d.size();
  if (n == 0) return 0.0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, emax = 0.0;
  for (Index i = 0; i < n; ++i) {  // Gershgorin interval
    const double r = (i > 0 ? std::abs(e[i - 1]) : 0.0) + (i + 1 < n ? std::abs(e[i]) : 0.0);
    lo = std::min(lo, d[i] - r);
    hi = std::max(hi, d[i] + r);
    if (i + 1 < n) emax = std::max(emax, e[i] * e[i]);
  }
  const double pivmin = std::max(std::numeric_limits<double>::min(), std::numeric_limits<double>::min() * emax);
  // Largest eigenvalue = smallest x with count(x) == n.
  const double eps = std::numeric_limits<double>::epsilon();
  for (int it = 0; it < 200 && hi - lo > 4.0 * eps * std::max(std::abs(lo), std::abs(hi)); ++it) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    if (sturm_count(d, e, mid, pivmin) == n) hi = mid;
    else lo = mid;
  }
  return hi;
}

Matrix solve_shifted_system_tridiag(MatrixRef G, MatrixCRef R, const Vector& alphas, SolveReport* report) {
  return solve_shifted_system_tridiag(G, R, alphas, report, false);
}

Matrix solve_shifted_system_tridiag(MatrixRef G, MatrixCRef R, const Vector& alphas, SolveReport* report,
                                    bool primal) {
  require(alphas.size() >= 1, "at least one regularization value is needed");
  for (Index k = 0; k < alphas.size(); ++k)
    require(std::isfinite(alphas[k]) && alphas[k] > 0.0, "regularization values must be finite and > 0");
  const Index r = G.rows(), v = R.cols(), na = alphas.size();
  require(G.cols() == r && R.rows() == r, "solve_shifted_system_tridiag: shape mismatch");
  Vector d, e, tau;
  lapack::sytrd_lower(G, d, e, tau);
  // The same positive-definiteness rule and condition report as the eigendecomposition path.
  const double sigma_max = std::max(0.0, tridiagonal_max_eigenvalue(d, e));
  // the primal's smallest eigenvalue, -(largest of -T); S K S's counts as 0 (solve_shifted_system)
  const double sigma_min = primal ? std::max(0.0, -tridiagonal_max_eigenvalue(-d, e)) : 0.0;
  const double eps = std::numeric_limits<double>::epsilon();
  double rc = 1.0;
  for (Index k = 0; k < na; ++k) {
    const double rc_k = (sigma_min + alphas[k]) / (sigma_max + alphas[k]);
    if (primal ? rc_k <= static_cast<double>(r) * eps : alphas[k] <= sigma_max * eps)
      not_positive_definite(alphas[k], primal);
    rc = std::min(rc, rc_k);
  }
  if (report) report->rcond = rc;
  Matrix C = R;
  lapack::ormtr_lower_left('T', G, tau, C);  // Q^T R
  Matrix Z(r, na * v);
  Vector piv(r), l(r);
  for (Index k = 0; k < na; ++k) {
    // LDL^T of T + alpha I (no pivoting needed: symmetric positive definite).
    const double a = alphas[k];
    piv[0] = d[0] + a;
    for (Index i = 1; i < r; ++i) {
      l[i] = e[i - 1] / piv[i - 1];
      piv[i] = d[i] + a - l[i] * e[i - 1];
    }
    for (Index i = 0; i < r; ++i)
      if (!(piv[i] > 0.0)) not_positive_definite(a, primal);
    for (Index c = 0; c < v; ++c) {
      double* z = Z.col(k * v + c).data();
      const double* b = C.col(c).data();
      z[0] = b[0];
      for (Index i = 1; i < r; ++i) z[i] = b[i] - l[i] * z[i - 1];
      for (Index i = 0; i < r; ++i) z[i] /= piv[i];
      for (Index i = r - 2; i >= 0; --i) z[i] -= l[i + 1] * z[i + 1];
    }
  }
  lapack::ormtr_lower_left('N', G, tau, Z);  // Q Z for every alpha at once
  return Z;
}

Matrix rankrls_dual_scores_tridiag(MatrixRef K, const GroupStructure& groups, MatrixCRef Y, const Vector& alphas,
                                   int n_threads, SolveReport* report) {
  return rankrls_dual_scores(K, groups, Y, alphas, n_threads, report, solve_shifted_system_tridiag);
}

}  // namespace fastrank
