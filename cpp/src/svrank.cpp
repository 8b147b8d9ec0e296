// SVRank: O(m log m) pairwise epsilon-insensitive loss and a cutting-plane solver (see svrank.hpp).
#include "fastrank/svrank.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <Eigen/Eigenvalues>

#include "fastrank/errors.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank {

namespace {

// Order-preserving map of a double's float32 rounding to an unsigned integer.  Rounding to float
// is monotone (r < r' implies float(r) <= float(r')), so sorting by this key orders the residuals
// up to runs of equal keys, which are then sorted by their exact double values.
inline std::uint32_t sort_key(double v) {
  const float f = static_cast<float>(v);
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return (u >> 31) ? ~u : (u | 0x80000000u);
}

// Scratch of one group (slices of the evaluator's buffers).
struct SortBuffers {
  std::uint32_t* key;
  std::uint32_t* idx;
  std::uint32_t* key2;
  std::uint32_t* idx2;
  double* val;
};

// Sorts the rows of one group by residual: LSD radix sort of (32-bit key, row) on 11-bit digits
// (3 passes after one histogram pass; passes whose digit is constant are skipped), then exact
// sorting inside runs of equal keys.  O(n) for the bulk instead of n log n comparisons: the sort
// is the oracle's dominant cost.  On return val[k] is the k-th smallest residual, idx[k] its row.
void sort_residuals(const double* r, SortBuffers b, Index n) {
  if (n < 512) {  // small groups: the radix histograms would cost more than comparisons
    for (Index i = 0; i < n; ++i) b.idx[i] = static_cast<std::uint32_t>(i);
    std::sort(b.idx, b.idx + n, [r](std::uint32_t x, std::uint32_t y) { return r[x] < r[y]; });
    for (Index i = 0; i < n; ++i) b.val[i] = r[b.idx[i]];
    return;
  }
  for (Index i = 0; i < n; ++i) {
    b.key[i] = sort_key(r[i]);
    b.idx[i] = static_cast<std::uint32_t>(i);
  }
  constexpr int kBits = 11, kRadix = 1 << kBits, kPasses = 3;
  std::uint32_t hist[kPasses][kRadix] = {};
  for (Index i = 0; i < n; ++i) {
    const std::uint32_t k = b.key[i];
    ++hist[0][k & (kRadix - 1)];
    ++hist[1][(k >> kBits) & (kRadix - 1)];
    ++hist[2][k >> (2 * kBits)];
  }
  std::uint32_t *ks = b.key, *kd = b.key2, *is = b.idx, *id = b.idx2;
  for (int p = 0; p < kPasses; ++p) {
    std::uint32_t* h = hist[p];
    const int shift = p * kBits;
    if (h[(ks[0] >> shift) & (kRadix - 1)] == static_cast<std::uint32_t>(n)) continue;
    std::uint32_t sum = 0;
    for (int d = 0; d < kRadix; ++d) {
      const std::uint32_t c = h[d];
      h[d] = sum;
      sum += c;
    }
    for (Index i = 0; i < n; ++i) {
      const std::uint32_t pos = h[(ks[i] >> shift) & (kRadix - 1)]++;
      kd[pos] = ks[i];
      id[pos] = is[i];
    }
    std::swap(ks, kd);
    std::swap(is, id);
  }
  if (is != b.idx) std::copy(is, is + n, b.idx);
  for (Index i = 0; i < n; ++i) b.val[i] = r[b.idx[i]];
  // Exact order inside runs of residuals that round to the same float.
  for (Index i = 0; i < n;) {
    Index j = i + 1;
    while (j < n && ks[j] == ks[i]) ++j;
    if (j - i > 1) {
      if (j - i <= 32) {
        for (Index a = i + 1; a < j; ++a) {
          const double v = b.val[a];
          const std::uint32_t x = b.idx[a];
          Index c = a;
          for (; c > i && b.val[c - 1] > v; --c) {
            b.val[c] = b.val[c - 1];
            b.idx[c] = b.idx[c - 1];
          }
          b.val[c] = v;
          b.idx[c] = x;
        }
      } else {
        std::vector<std::pair<double, std::uint32_t>> run(j - i);
        for (Index a = i; a < j; ++a) run[a - i] = {b.val[a], b.idx[a]};
        std::sort(run.begin(), run.end(),
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        for (Index a = i; a < j; ++a) {
          b.val[a] = run[a - i].first;
          b.idx[a] = run[a - i].second;
        }
      }
    }
    i = j;
  }
}

// One group [lo, hi): loss (ordered pairs) and g on its rows; `b` points at the group's slices.
double group_pair_loss(const double* r, Index lo, Index hi, double eps, double* g, SortBuffers b) {
  const Index n = hi - lo;
  if (n < 2) {
    for (Index k = lo; k < hi; ++k) g[k] = 0.0;
    return 0.0;
  }
  double shift = 0.0;
  for (Index k = lo; k < hi; ++k) shift += r[k];
  shift /= static_cast<double>(n);
  sort_residuals(r + lo, b, n);
  const double* s = b.val;
  // Comparisons use the raw residuals (exactly the brute-force predicates r_k - r_j > eps); the
  // sums use residuals minus the group mean so that A_k s_k - prefix does not cancel badly.
  Index p = 0, q = 0;
  double prefix = 0.0, loss = 0.0;
  for (Index k = 0; k < n; ++k) {
    const double sk = s[k];
    while (p < n && sk - s[p] > eps) {
      prefix += s[p] - shift;
      ++p;
    }
    if (q < k) q = k;
    while (q < n && !(s[q] - sk > eps)) ++q;
    loss += static_cast<double>(p) * ((sk - shift) - eps) - prefix;
    g[lo + b.idx[k]] = 2.0 * static_cast<double>(p - (n - q));
  }
  return 2.0 * loss;
}

void check_offsets(const std::int64_t* offsets, Index n_groups, Index m) {
  require(n_groups >= 1, "svrank: need at least one group");
  require(offsets[0] == 0 && offsets[n_groups] == m, "svrank: group offsets must run from 0 to m");
  for (Index q = 0; q < n_groups; ++q) require(offsets[q + 1] >= offsets[q], "svrank: group offsets must be sorted");
}

// Sum over groups of n_q^2: the number of ordered pairs (diagonal included) of eq. (9).
double ordered_pairs(const std::int64_t* offsets, Index n_groups, bool* has_pair) {
  double total = 0.0;
  *has_pair = false;
  for (Index q = 0; q < n_groups; ++q) {
    const double n = static_cast<double>(offsets[q + 1] - offsets[q]);
    total += n * n;
    if (n >= 2) *has_pair = true;
  }
  return total;
}

class PairLoss {
 public:
  PairLoss(Index m, const std::int64_t* offsets, Index n_groups, double eps, int n_threads)
      : m_(m), offsets_(offsets), n_groups_(n_groups), eps_(eps), n_threads_(n_threads), key_(m), key2_(m),
        idx_(m), idx2_(m), val_(m), group_loss_(n_groups) {
    require(m < (Index(1) << 32), "svrank: more than 2^32 rows");
  }

  double operator()(const double* r, double* g) {
    parallel_for(0, n_groups_, n_threads_, 16, [&](Index lo, Index hi) {
      for (Index q = lo; q < hi; ++q) {
        const Index o = offsets_[q];
        SortBuffers b{key_.data() + o, idx_.data() + o, key2_.data() + o, idx2_.data() + o, val_.data() + o};
        group_loss_[q] = group_pair_loss(r, o, offsets_[q + 1], eps_, g, b);
      }
    });
    double total = 0.0;
    for (double v : group_loss_) total += v;  // fixed order: independent of the thread count
    return total;
  }

 private:
  Index m_;
  const std::int64_t* offsets_;
  Index n_groups_;
  double eps_;
  int n_threads_;
  std::vector<std::uint32_t> key_, key2_, idx_, idx2_;
  std::vector<double> val_;
  std::vector<double> group_loss_;
};

// f = X w and a = X^T c: matrix-vector products (Eigen's kernels; BLAS dgemm with one column
// packs X first and was 3x slower than a plain pass here).
void x_times(const RowMatrixCRef& X, const Vector& w, Vector& f) { f.noalias() = X * w; }
void xt_times(const RowMatrixCRef& X, const Vector& c, Vector& a) { a.noalias() = X.transpose() * c; }

// Linear model: planes a_t in R^n.
class LinearModel {
 public:
  explicit LinearModel(const RowMatrixCRef& X) : X_(X), A_(X.cols(), 16), w_(Vector::Zero(X.cols())) {}
  double zero(Vector& f) {
    w_.setZero();
    f.setZero(X_.rows());
    return 0.0;
  }
  // w = -1/2 sum_t lambda_t a_t; returns ||w||^2.
  double set(const Vector& lam, Vector& f) {
    w_.noalias() = -0.5 * (A_.leftCols(k_) * lam);
    x_times(X_, w_, f);
    return w_.squaredNorm();
  }
  // Stores the plane of sample-space coefficients c; qcol = Gram column against all planes.
  void add(const Vector& c, Vector& qcol) {
    xt_times(X_, c, a_);
    if (k_ == A_.cols()) A_.conservativeResize(Eigen::NoChange, 2 * A_.cols());
    A_.col(k_) = a_;
    ++k_;
    qcol.noalias() = A_.leftCols(k_).transpose() * a_;
  }
  const Vector& coef() const { return w_; }
  // Keeps the planes listed in `keep` (increasing), in that order.
  void compact(const std::vector<Index>& keep) {
    for (Index j = 0; j < static_cast<Index>(keep.size()); ++j) A_.col(j) = A_.col(keep[j]);
    k_ = static_cast<Index>(keep.size());
  }

 private:
  const RowMatrixCRef& X_;
  Matrix A_;
  Index k_ = 0;
  Vector w_, a_;
};

// Kernel model: plane t is (C/N) sum_i g_i Phi(x_i); stored as c_t and u_t = K c_t.
class KernelModel {
 public:
  explicit KernelModel(const MatrixCRef& K) : K_(K), C_(K.rows(), 16), U_(K.rows(), 16), beta_(Vector::Zero(K.rows())) {}
  double zero(Vector& f) {
    beta_.setZero();
    f.setZero(K_.rows());
    return 0.0;
  }
  double set(const Vector& lam, Vector& f) {
    beta_.noalias() = -0.5 * (C_.leftCols(k_) * lam);
    f.noalias() = -0.5 * (U_.leftCols(k_) * lam);
    return std::max(0.0, beta_.dot(f));  // ||w||^2 = beta^T K beta
  }
  void add(const Vector& c, Vector& qcol) {
    if (k_ == C_.cols()) {
      C_.conservativeResize(Eigen::NoChange, 2 * C_.cols());
      U_.conservativeResize(Eigen::NoChange, 2 * U_.cols());
    }
    C_.col(k_) = c;
    U_.col(k_).noalias() = K_ * c;  // matrix-vector: BLAS dgemm would pack K on every call
    ++k_;
    qcol.noalias() = C_.leftCols(k_).transpose() * U_.col(k_ - 1);
  }
  const Vector& coef() const { return beta_; }
  void compact(const std::vector<Index>& keep) {
    for (Index j = 0; j < static_cast<Index>(keep.size()); ++j) {
      C_.col(j) = C_.col(keep[j]);
      U_.col(j) = U_.col(keep[j]);
    }
    k_ = static_cast<Index>(keep.size());
  }

 private:
  const MatrixCRef& K_;
  Matrix C_, U_;
  Index k_ = 0;
  Vector beta_;
};

template <class Model>
SvrankResult cutting_plane(Model& model, const VectorCRef& y, const IndexVectorCRef& offsets,
                           const SvrankOptions& opt) {
  const Index m = y.size();
  const Index n_groups = offsets.size() - 1;
  require(offsets.size() >= 2, "svrank: group offsets need at least two entries");
  check_offsets(offsets.data(), n_groups, m);
  require(opt.C > 0 && std::isfinite(opt.C), "svrank: C must be finite and > 0");
  require(opt.eps >= 0 && std::isfinite(opt.eps), "svrank: epsilon must be finite and >= 0");
  require(opt.tol >= 0, "svrank: tol must be >= 0");
  require(opt.max_iter >= 1, "svrank: max_iter must be >= 1");
  bool has_pair = false;
  const double n_pairs = ordered_pairs(offsets.data(), n_groups, &has_pair);
  require(has_pair, "svrank: no pair of rows shares a group; every group has a single row");
  const double scale = opt.C / n_pairs;

  PairLoss pair_loss(m, offsets.data(), n_groups, opt.eps, opt.n_threads);
  Vector f(m), r(m), g(m), c(m), qcol;
  Matrix Q(16, 16);
  Vector b(16);
  Vector lam;
  SvrankResult res;
  double norm2 = model.zero(f);
  double best_F = std::numeric_limits<double>::infinity();
  double best_lb = -std::numeric_limits<double>::infinity();
  Vector best_coef = model.coef();
  // Planes unused (lambda = 0) for kPrune consecutive iterations are dropped: the working set
  // stays about n + 1 planes, so the inner QP stays small.  best_lb keeps the largest bound seen,
  // which stays valid (every model was a lower bound of F when it was solved).
  constexpr Index kPrune = 50;
  std::vector<Index> idle;
  Index k = 0;  // planes in the model
  for (Index t = 0; t < opt.max_iter; ++t) {
    r = f - y;
    const double R = scale * pair_loss(r.data(), g.data());
    const double F = norm2 + R;
    if (F < best_F) {
      best_F = F;
      best_coef = model.coef();
    }
    res.n_iter = t + 1;
    if (best_F <= 0.0) {  // w = 0 with zero loss: every target difference is within epsilon
      best_lb = 0.0;
      res.gap_history.push_back(0.0);
      res.converged = true;
      break;
    }
    // Plane tangent at the current point: a . w + b_k = R(w).
    c = scale * g;
    if (k == Q.cols()) {
      Q.conservativeResize(2 * k, 2 * k);
      b.conservativeResize(2 * k);
    }
    b[k] = R - c.dot(f);
    model.add(c, qcol);
    Q.col(k).head(k + 1) = qcol;
    Q.row(k).head(k + 1) = qcol.transpose();
    lam.conservativeResize(k + 1);
    lam[k] = (k == 0) ? 1.0 : 0.0;
    idle.push_back(0);
    ++k;
    const double lb = simplex_qp(Q.topLeftCorner(k, k), b.head(k), lam);
    best_lb = std::max(best_lb, lb);
    const double gap = (best_F - best_lb) / best_F;
    res.gap_history.push_back(gap);
    if (gap <= opt.tol) {
      res.converged = true;
      break;
    }
    norm2 = model.set(lam, f);
    bool prune = false;
    for (Index j = 0; j < k; ++j) {
      idle[j] = lam[j] > 0.0 ? 0 : idle[j] + 1;
      prune = prune || idle[j] > kPrune;
    }
    if (prune) {
      std::vector<Index> keep;
      for (Index j = 0; j < k; ++j)
        if (idle[j] <= kPrune) keep.push_back(j);
      const Index nk = static_cast<Index>(keep.size());
      for (Index a = 0; a < nk; ++a) {
        for (Index c2 = 0; c2 < nk; ++c2) Q(a, c2) = Q(keep[a], keep[c2]);  // keep[a] >= a: in place
        b[a] = b[keep[a]];
        lam[a] = lam[keep[a]];
        idle[a] = idle[keep[a]];
      }
      lam.conservativeResize(nk);
      idle.resize(nk);
      model.compact(keep);
      k = nk;
    }
  }
  res.coef = best_coef;
  res.objective = best_F;
  res.lower_bound = best_lb;
  return res;
}

}  // namespace

double svrank_pair_loss(const double* r, Index m, const std::int64_t* offsets, Index n_groups, double eps, double* g,
                        int n_threads) {
  check_offsets(offsets, n_groups, m);
  require(eps >= 0 && std::isfinite(eps), "svrank: epsilon must be finite and >= 0");
  PairLoss loss(m, offsets, n_groups, eps, n_threads);
  return loss(r, g);
}

double svrank_linear_oracle(const RowMatrixCRef& X, const VectorCRef& y, const VectorCRef& w,
                            const IndexVectorCRef& offsets, double C, double eps, Vector& grad, int n_threads) {
  const Index m = X.rows();
  require(y.size() == m && w.size() == X.cols(), "svrank: shapes of X, y and w disagree");
  require(offsets.size() >= 2, "svrank: group offsets need at least two entries");
  const Index n_groups = offsets.size() - 1;
  check_offsets(offsets.data(), n_groups, m);
  bool has_pair = false;
  const double scale = C / ordered_pairs(offsets.data(), n_groups, &has_pair);
  Vector f, g(m), wv = w;
  x_times(X, wv, f);
  f -= y;
  PairLoss loss(m, offsets.data(), n_groups, eps, n_threads);
  const double L = loss(f.data(), g.data());
  g *= scale;
  xt_times(X, g, grad);
  return scale * L;
}

SvrankResult svrank_linear(const RowMatrixCRef& X, const VectorCRef& y, const IndexVectorCRef& offsets,
                           const SvrankOptions& opt) {
  require(y.size() == X.rows(), "svrank: X and y have different numbers of rows");
  LinearModel model(X);
  return cutting_plane(model, y, offsets, opt);
}

SvrankResult svrank_kernel(const MatrixCRef& K, const VectorCRef& y, const IndexVectorCRef& offsets,
                           const SvrankOptions& opt) {
  require(K.rows() == K.cols(), "svrank: the kernel matrix must be square");
  require(y.size() == K.rows(), "svrank: K and y have different numbers of rows");
  KernelModel model(K);
  return cutting_plane(model, y, offsets, opt);
}

// Primal active-set method on the simplex for min phi(l) = 1/4 l^T Q l - b^T l.  The working set
// W holds the variables free to move; each step minimises phi over {l_W : sum = 1} by a Newton
// step in the eigenbasis of the reduced Hessian P (Q_WW / 2) P (P = centring projector), plus a
// steepest-descent component in its null space (Q is only PSD: planes are linearly dependent once
// there are more of them than dimensions), with an exact line search cut at the first bound.

double simplex_qp(const MatrixCRef& Q, const VectorCRef& b, Vector& lam) {
  const Index k = b.size();
  require(Q.rows() == k && Q.cols() == k && lam.size() == k, "simplex_qp: sizes disagree");
  if (k == 1) {
    lam.setOnes(1);
    return b[0] - 0.25 * Q(0, 0);
  }
  lam = lam.cwiseMax(0.0);
  lam /= lam.sum();
  std::vector<char> in_w(k);
  for (Index i = 0; i < k; ++i) in_w[i] = lam[i] > 0.0;
  // The newest plane (last) is the cut just added: it is violated by the previous solution, so it
  // enters the working set at once instead of after a first, wasted optimality check.
  in_w[k - 1] = 1;
  Vector grad(k), ql(k), gw, gr, coeffs, p, d, qp;
  Matrix M;
  std::vector<Index> idx;
  const Index max_steps = 50 * k + 500;
  for (Index step = 0; step < max_steps; ++step) {
    ql.noalias() = Q * lam;
    grad = 0.5 * ql - b;
    idx.clear();
    for (Index i = 0; i < k; ++i)
      if (in_w[i]) idx.push_back(i);
    const Index f = static_cast<Index>(idx.size());
    gw.resize(f);
    for (Index a = 0; a < f; ++a) gw[a] = grad[idx[a]];
    const double nu = gw.mean();
    gr = gw.array() - nu;
    const double phi_scale = std::max({std::abs(b.dot(lam)), 0.25 * lam.dot(ql), 1e-300});
    bool stationary = true;
    if (f > 1) {
      M.resize(f, f);
      for (Index a = 0; a < f; ++a)
        for (Index c = 0; c < f; ++c) M(a, c) = 0.5 * Q(idx[a], idx[c]);
      const Vector rm = M.rowwise().mean();
      const double tm = rm.mean();
      for (Index a = 0; a < f; ++a)
        for (Index c = 0; c < f; ++c) M(a, c) -= rm[a] + rm[c] - tm;
      if (f <= 64) {
        // Tiny systems: Eigen's solver; a LAPACK call costs more in overhead (and in waking
        // BLAS threads) than the O(f^3) work itself at this size.
        Eigen::SelfAdjointEigenSolver<Matrix> es(M);
        d = es.eigenvalues();
        M = es.eigenvectors();
      } else {
        lapack::syevd(M, d);  // M <- eigenvectors
      }
      const double dmax = std::max(d.maxCoeff(), 0.0);
      const double thr = 1e-11 * dmax;
      coeffs.noalias() = M.transpose() * gr;
      p.setZero(f);
      for (Index a = 0; a < f; ++a) {
        const double s = (d[a] > thr && d[a] > 0.0) ? coeffs[a] / d[a] : coeffs[a];
        p.noalias() -= s * M.col(a);
      }
      p.array() -= p.mean();  // stay on sum(l) = 1 despite rounding
      const double slope = gw.dot(p);
      if (slope < -1e-15 * phi_scale) {
        stationary = false;
        qp.setZero(f);
        for (Index a = 0; a < f; ++a)
          for (Index c = 0; c < f; ++c) qp[a] += 0.5 * Q(idx[a], idx[c]) * p[c];
        const double curv = p.dot(qp);
        const double a_line = curv > 0.0 ? -slope / curv : std::numeric_limits<double>::infinity();
        double a_bound = std::numeric_limits<double>::infinity();
        Index blocking = -1;
        for (Index a = 0; a < f; ++a)
          if (p[a] < 0.0) {
            const double s = -lam[idx[a]] / p[a];
            if (s < a_bound) {
              a_bound = s;
              blocking = a;
            }
          }
        const double alpha = std::min(a_line, a_bound);
        for (Index a = 0; a < f; ++a) lam[idx[a]] += alpha * p[a];
        if (a_bound <= a_line && blocking >= 0) {
          lam[idx[blocking]] = 0.0;
          in_w[idx[blocking]] = 0;
        }
        for (Index a = 0; a < f; ++a)
          if (lam[idx[a]] <= 0.0) {
            lam[idx[a]] = 0.0;
            in_w[idx[a]] = 0;
          }
        lam /= lam.sum();
      }
    }
    if (!stationary) continue;
    // Optimal on the working set: add the variable with the most negative reduced cost.
    const double gscale = std::max(grad.cwiseAbs().maxCoeff(), 1e-300);
    Index best = -1;
    double best_cost = -1e-13 * gscale;
    for (Index i = 0; i < k; ++i)
      if (!in_w[i] && grad[i] - nu < best_cost) {
        best_cost = grad[i] - nu;
        best = i;
      }
    if (best < 0) break;
    in_w[best] = 1;
  }
  return b.dot(lam) - 0.25 * lam.dot(Q * lam);
}

}  // namespace fastrank
