#include "fastrank/online_mprank.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fastrank/errors.hpp"
#include "fastrank/interrupt.hpp"
#include "fastrank/lapack.hpp"

namespace fastrank {

namespace {
double cost(const Vector& a, const Vector& v, VectorCRef yt, double C) {
  const double m = static_cast<double>(a.size());
  return a.dot(v) + (2.0 * C / m) * (v - yt).squaredNorm();
}

// Kt given as the dense centred kernel matrix: the sequential pass keeps v = Kt a by column updates, O(m^2).
struct KernelOperator {
  MatrixCRef Kt;
  void product(const Vector& x, Vector& out) const {
    const Index m = Kt.rows();
    lapack::gemm('N', 'N', m, 1, m, 1.0, Kt.data(), Kt.outerStride(), x.data(), m, 0.0, out.data(), m);
  }
  void sync(const Vector& a, Vector& v) { product(a, v); }
  double frobenius() const { return Kt.norm(); }
  template <class Step>
  void sweep(Vector& a, Vector& v, Step step) {
    for (Index i = 0; i < Kt.rows(); ++i) {
      const double delta = step(i, v[i]);
      if (delta == 0.0) continue;
      a[i] += delta;
      v.noalias() += delta * Kt.col(i);  // Kt symmetric: column i = row i
    }
  }
};

// Kt = Xc Xc^T of the centred features, never formed: the sequential pass keeps w = Xc^T a, O(m d).
struct LinearOperator {
  RowMatrixCRef Xc;
  Vector w;
  void product(const Vector& x, Vector& out) const {
    const Vector u = Xc.transpose() * x;
    out.noalias() = Xc * u;
  }
  void sync(const Vector& a, Vector& v) {
    w.noalias() = Xc.transpose() * a;
    v.noalias() = Xc * w;
  }
  // ||Xc Xc^T||_F = ||Xc^T Xc||_F (the same eigenvalues), a d x d product
  double frobenius() const { return (Xc.transpose() * Xc).norm(); }
  template <class Step>
  void sweep(Vector& a, Vector& v, Step step) {
    for (Index i = 0; i < Xc.rows(); ++i) {
      const double delta = step(i, Xc.row(i).dot(w));
      if (delta == 0.0) continue;
      a[i] += delta;
      w.noalias() += delta * Xc.row(i).transpose();
    }
    v.noalias() = Xc * w;
  }
};

template <class Operator>
MPRankOnlineResult iterate(Operator& op, VectorCRef yt, double C, double eta, bool sequential, int max_iter,
                           double tol, Eigen::Ref<Vector> alpha) {
  const Index m = yt.size();
  require(alpha.size() == m, "targets and coefficients must have one entry per point");
  require(std::isfinite(C) && C > 0, "C must be positive and finite");
  require(std::isfinite(eta) && eta > 0, "eta must be positive and finite");
  require(max_iter >= 0, "max_iter must be >= 0");
  require(tol >= 0, "tol must be >= 0");
  MPRankOnlineResult res;
  if (m == 0) return res;
  const double md = static_cast<double>(m), ridge = md / C;
  Vector a = alpha, v(m);
  op.sync(a, v);
  res.costs.push_back(cost(a, v, yt, C));
  // Stop on the gradient of the dual (eq. 16), g = 2 (yt - Kt a) - (m/C) a = 2 B (a* - a) with B = Kt + m/(2C) I:
  // the training predictions' error Kt (a - a*) = -Kt B^-1 g / 2 is at most |g| / 2, so |g| <= 2 tol |Kt a| holds
  // them within about tol (relative) of the fixed point (eq. 13).  The paper's rule, a relative change of the cost
  // below 1e-4, stopped 9.5e-2 away from it on nearly collinear features (slow passes change the cost little);
  // |g| against its value 2 |yt| at a = 0 stopped 5.5e-2 away where the model explains little of y.  A model whose
  // predictions are 0 (rows all alike, y orthogonal to the kernel) stops where g reaches its rounding, 16 sqrt(m) eps
  // |yt| (the products behind v round by about sqrt(m) eps of their terms).
  const double floor = 16.0 * std::sqrt(md) * std::numeric_limits<double>::epsilon() * yt.norm();
  // Per eigenvalue lambda of Kt, Kt B^-1 scales g by lambda / (lambda + m/(2C)) <= 2 lambda C / m, so the error is
  // also at most C |Kt g| / m: components of a in Kt's null space (a linear kernel of n << m features), which decay
  // at the slow rate 1 - eta m / C and move no prediction, then stop no pass.  Kt g's rounding, at most
  // 16 sqrt(m) eps ||Kt||_F |g|, counts against the test.
  Vector g(m), kg(m);
  double kt_norm = -1.0;  // ||Kt||_F, computed when first needed
  auto gradient_small = [&]() {
    g.noalias() = 2.0 * (yt - v) - ridge * a;
    return g.norm() <= 2.0 * tol * v.norm() || g.norm() <= floor;
  };
  auto converged = [&]() {
    if (gradient_small()) return true;
    op.product(g, kg);
    if (kt_norm < 0.0) kt_norm = op.frobenius();
    return kg.norm() + 16.0 * std::sqrt(md) * std::numeric_limits<double>::epsilon() * kt_norm * g.norm() <=
           tol * ridge * v.norm();
  };
  // The range test costs a product: it is tried when a cheap estimate of |Kt g| passes it (with the gradient rule,
  // v's change in the pass, eta Kt g of the pass before: every component of the error shrinks in a stable pass) and
  // every 16th sequential pass.
  auto worth_trying = [&](const Vector& v_before, int it) {
    if (!sequential) return (v - v_before).norm() <= eta * tol * ridge * v.norm();
    return (it + 1) % 16 == 0;
  };
  auto step = [&](Index i, double v_i) { return eta * (2.0 * (yt[i] - v_i) - ridge * a[i]); };
  Vector v_before(m);
  for (int it = 0; it < max_iter; ++it) {
    interrupt::poll();
    if (!sequential) v_before = v;  // the gradient rule's cheap estimate of |Kt g| (worth_trying)
    if (sequential) {
      op.sweep(a, v, step);
      if ((it + 1) % 16 == 0) op.sync(a, v);  // re-synchronise against rounding drift
    } else {
      a += eta * (2.0 * (yt - v) - ridge * a);
      op.sync(a, v);
    }
    const double cur = cost(a, v, yt, C);
    if (!std::isfinite(cur)) throw LinAlgError("on-line MPRank diverged; use a smaller learning rate eta");
    res.costs.push_back(cur);
    res.n_iter = it + 1;
    if (gradient_small() || worth_trying(v_before, it)) {
      if (sequential && (it + 1) % 16 != 0) op.sync(a, v);  // v from exact products, not the updates' drift
      if (converged()) {
        res.converged = true;
        break;
      }
    }
  }
  alpha = a;
  return res;
}
}  // namespace

MPRankOnlineResult mprank_online(MatrixCRef Kt, VectorCRef yt, double C, double eta, bool sequential,
                                 int max_iter, double tol, Eigen::Ref<Vector> alpha) {
  require(Kt.cols() == Kt.rows(), "the centred kernel matrix must be square");
  require(yt.size() == Kt.rows(), "targets and coefficients must have one entry per point");
  KernelOperator op{Kt};
  return iterate(op, yt, C, eta, sequential, max_iter, tol, alpha);
}

MPRankOnlineResult mprank_online_linear(RowMatrixCRef Xc, VectorCRef yt, double C, double eta, bool sequential,
                                        int max_iter, double tol, Eigen::Ref<Vector> alpha) {
  require(yt.size() == Xc.rows(), "targets and coefficients must have one entry per row of the centred features");
  LinearOperator op{Xc, Vector::Zero(Xc.cols())};
  return iterate(op, yt, C, eta, sequential, max_iter, tol, alpha);
}

}  // namespace fastrank
