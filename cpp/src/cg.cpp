#include "fastrank/cg.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "fastrank/errors.hpp"
#include "fastrank/interrupt.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank {

// ---------------------------------------------------------------------------------------------
// Implicit Laplacian
// ---------------------------------------------------------------------------------------------

RankingLaplacian RankingLaplacian::groups(GroupIndex groups, VectorCRef pair_weight) {
  const Index n_groups = groups.n_groups();
  require(n_groups >= 1, "at least one group is needed");
  require(pair_weight.size() == n_groups, "pair_weight needs one entry per group");
  RankingLaplacian L;
  L.kind = Kind::Groups;
  L.m = groups.n_rows();
  L.codes = groups.row_groups();
  L.group_size.resize(n_groups);
  L.pair_weight.resize(n_groups);
  for (Index q = 0; q < n_groups; ++q) {
    L.group_size[q] = static_cast<double>(groups.group_size(q));
    require(L.group_size[q] >= 1.0, "every group must contain at least one row");
    require(std::isfinite(pair_weight[q]) && pair_weight[q] > 0.0, "pair weights must be finite and > 0");
    L.pair_weight[q] = pair_weight[q];
  }
  L.rows = std::move(groups);
  return L;
}

RankingLaplacian RankingLaplacian::preferences(PreferenceGraph graph) {
  graph.validate();
  RankingLaplacian L;
  L.kind = Kind::Graph;
  L.m = graph.n_vertices;
  L.graph = std::move(graph);
  return L;
}

Index RankingLaplacian::n_outputs(const RowMatrix& Y) const {
  return kind == Kind::Graph ? graph.target.cols() : Y.cols();
}

void RankingLaplacian::apply(const RowMatrix& U, RowMatrix& out) const {
  require(U.rows() == m, "Laplacian: row count mismatch");
  const Index v = U.cols();
  out.resize(m, v);
  if (kind == Kind::Groups) {
    const Index q = group_size.size();
    if (q == 1) {  // object ranking: c (m U - 1 1^T U), vectorized
      const Eigen::RowVectorXd total = U.colwise().sum();
      out = pair_weight[0] * (group_size[0] * U - Eigen::VectorXd::Ones(m) * total);
      return;
    }
    RowMatrix sums = RowMatrix::Zero(q, v);
    if (v == 1) {
      const double* u = U.data();
      double* s = sums.data();
      for (Index i = 0; i < m; ++i) s[codes[i]] += u[i];
      double* o = out.data();
      for (Index i = 0; i < m; ++i) {
        const std::int64_t g = codes[i];
        o[i] = pair_weight[g] * (group_size[g] * u[i] - s[g]);
      }
    } else {
      for (Index i = 0; i < m; ++i) sums.row(codes[i]) += U.row(i);
      for (Index i = 0; i < m; ++i) {
        const std::int64_t g = codes[i];
        out.row(i) = pair_weight[g] * (group_size[g] * U.row(i) - sums.row(g));
      }
    }
  } else {
    out.setZero();
    for (Index e = 0; e < graph.n_edges(); ++e) {
      const Index h = graph.head[e], t = graph.tail[e];
      const double w2 = graph.weight[e] * graph.weight[e];
      if (v == 1) {
        const double d = w2 * (U(h, 0) - U(t, 0));
        out(h, 0) += d;
        out(t, 0) -= d;
      } else {
        out.row(h) += w2 * (U.row(h) - U.row(t));
        out.row(t) -= w2 * (U.row(h) - U.row(t));
      }
    }
  }
}

RowMatrix RankingLaplacian::target_vector(const RowMatrix& Y) const {
  RowMatrix out;
  if (kind == Kind::Groups) {
    apply(Y, out);
  } else {
    out = graph_incidence_times_targets(graph);
  }
  return out;
}

namespace {

// Scatter helper: merges a sparse row (duplicates summed, any index order) in a dense buffer.
struct RowMerger {
  Vector buf;
  std::vector<char> mark;
  std::vector<Index> touched;
  explicit RowMerger(Index n) : buf(Vector::Zero(n)), mark(n, 0) {}
  void add(Index k, double x) {
    if (!mark[k]) {
      mark[k] = 1;
      touched.push_back(k);
    }
    buf[k] += x;
  }
  template <class F>
  void flush(F&& f) {
    for (Index k : touched) {
      f(k, buf[k]);
      buf[k] = 0.0;
      mark[k] = 0;
    }
    touched.clear();
  }
};

template <class I>
Vector jacobi_csr(const CsrView<I>& X, const RankingLaplacian& L) {
  const Index n = X.cols;
  require(X.rows == L.m, "Jacobi diagonal: row count mismatch");
  Vector d = Vector::Zero(n);
  RowMerger row(n), grp(n);
  auto merge_row = [&](Index i) {
    for (Index t = X.begin(i); t < X.end(i); ++t) row.add(static_cast<Index>(X.indices[t]), X.data[t]);
  };
  if (L.kind == RankingLaplacian::Kind::Groups) {
    const IndexVector &order = L.rows.order, &start = L.rows.offsets;
    for (Index q = 0; q + 1 < start.size(); ++q) {
      const double c = L.pair_weight[q], nq = L.group_size[q];
      for (Index s = start[q]; s < start[q + 1]; ++s) {
        merge_row(order[s]);
        row.flush([&](Index k, double x) {
          d[k] += c * nq * x * x;
          grp.add(k, x);
        });
      }
      grp.flush([&](Index k, double s) { d[k] -= c * s * s; });
    }
  } else {
    const PreferenceGraph& g = L.graph;
    Vector degree = Vector::Zero(L.m);
    for (Index e = 0; e < g.n_edges(); ++e) {
      const double w2 = g.weight[e] * g.weight[e];
      degree[g.head[e]] += w2;
      degree[g.tail[e]] += w2;
    }
    for (Index i = 0; i < L.m; ++i) {
      if (degree[i] == 0.0) continue;
      merge_row(i);
      row.flush([&](Index k, double x) { d[k] += degree[i] * x * x; });
    }
    for (Index e = 0; e < g.n_edges(); ++e) {
      const double w2 = g.weight[e] * g.weight[e];
      const Index h = g.head[e], tl = g.tail[e];
      for (Index t = X.begin(h); t < X.end(h); ++t) grp.add(static_cast<Index>(X.indices[t]), X.data[t]);
      for (Index t = X.begin(tl); t < X.end(tl); ++t) {
        const Index k = static_cast<Index>(X.indices[t]);
        if (grp.mark[k]) d[k] -= 2.0 * w2 * grp.buf[k] * X.data[t];
      }
      grp.flush([](Index, double) {});
    }
  }
  return d.cwiseMax(0.0);
}

// ---------------------------------------------------------------------------------------------
// Designs: X as CSR (threaded products) or dense (BLAS)
// ---------------------------------------------------------------------------------------------

template <class I>
class CsrDesign {
 public:
  CsrDesign(const CsrView<I>& X, int n_threads, bool transpose_copy)
      : X_(X), use_t_(transpose_copy), chunks_(product_chunks(X, n_threads)) {
    // The transposed copy uses int32 indices when they fit (less memory traffic than int64).
    if (use_t_ && (X.nnz() >= (Index(1) << 31) || X.rows >= (Index(1) << 31))) use_t_ = false;
    if (use_t_) {
      T_ = csr_transpose<std::int32_t>(X_);
      // each row of T's product is one thread's sum: any chunking gives the same bits
      const int parts = std::max(1, std::min<int>(n_threads, static_cast<int>(std::max<Index>(1, X.nnz() / 20000))));
      tchunks_ = RowChunks{balanced_row_chunks(T_.view(), parts), std::max(1, n_threads)};
    }
  }
  Index rows() const { return X_.rows; }
  Index cols() const { return X_.cols; }
  void times(const RowMatrix& P, RowMatrix& out) { csr_times(X_, P, out, chunks_); }
  void ttimes(const RowMatrix& U, RowMatrix& out) {
    if (use_t_)
      csr_times(T_.view(), U, out, tchunks_);
    else
      csr_transpose_times(X_, U, out, chunks_, buffers_);
  }
  Vector jacobi(const RankingLaplacian& L) const { return jacobi_csr(X_, L); }

  // Scoring setting, one output: out = X^T L X p with L folded into the two product loops
  // (no separate O(m) Laplacian passes): the X p loop also accumulates per-group sums S_q, and
  // the X^T u loop forms u_i = c_q n_q (X p)_i - c_q S_q on the fly.  Returns false otherwise.
  bool apply_scores(const RankingLaplacian& L, const RowMatrix& P, RowMatrix& out) {
    if (L.kind != RankingLaplacian::Kind::Groups || P.cols() != 1 || use_t_) return false;
    const Index m = X_.rows, n = X_.cols, q = L.group_size.size();
    const int parts = static_cast<int>(chunks_.bounds.size()) - 1;
    if (row_a_.size() != m) {
      row_a_.resize(m);
      for (Index i = 0; i < m; ++i) row_a_[i] = L.pair_weight[L.codes[i]] * L.group_size[L.codes[i]];
    }
    xp_.resize(m);
    sums_.resize(parts);
    const double* pv = P.data();
    const std::int64_t* codes = L.codes.data();
    run_chunks(chunks_, [&](int p, Index lo, Index hi) {
      Vector& S = sums_[p];
      S.setZero(q);
      for (Index i = lo; i < hi; ++i) {
        double acc = 0.0;
        for (Index t = X_.begin(i); t < X_.end(i); ++t) acc += X_.data[t] * pv[X_.indices[t]];
        xp_[i] = acc;
        S[codes[i]] += acc;
      }
    });
    Vector& S = sums_[0];
    for (int p = 1; p < parts; ++p) S += sums_[p];
    S.array() *= L.pair_weight.array();
    out.resize(n, 1);
    buffers_.resize(std::max(0, parts - 1));
    run_chunks(chunks_, [&](int p, Index lo, Index hi) {
      RowMatrix& buf = (p == 0) ? out : buffers_[p - 1];
      buf.setZero(n, 1);
      double* b = buf.data();
      for (Index i = lo; i < hi; ++i) {
        const double ui = row_a_[i] * xp_[i] - S[codes[i]];
        if (ui == 0.0) continue;
        for (Index t = X_.begin(i); t < X_.end(i); ++t) b[X_.indices[t]] += X_.data[t] * ui;
      }
    });
    if (parts > 1) {
      parallel_for(0, n, chunks_.threads, 131072, [&](Index lo, Index hi) {
        double* o = out.data();
        for (int p = 0; p + 1 < parts; ++p) {
          const double* b = buffers_[p].data();
          for (Index k = lo; k < hi; ++k) o[k] += b[k];
        }
      });
    }
    return true;
  }

 private:
  CsrView<I> X_;
  bool use_t_;
  RowChunks chunks_, tchunks_;
  CsrOwned<std::int32_t> T_;
  std::vector<RowMatrix> buffers_;
  Vector row_a_, xp_;         // apply_scores: c_q n_q per row, X p
  std::vector<Vector> sums_;  // apply_scores: per-chunk group sums
};

class DenseDesign {
 public:
  explicit DenseDesign(RowMatrixCRef X) : X_(X) {}
  Index rows() const { return X_.rows(); }
  Index cols() const { return X_.cols(); }
  // Row-major out (m x v) is column-major out^T (v x m) = P^T X^T.
  void times(const RowMatrix& P, RowMatrix& out) {
    const Index m = X_.rows(), n = X_.cols(), v = P.cols();
    out.resize(m, v);
    lapack::gemm('N', 'N', v, m, n, 1.0, P.data(), v, X_.data(), X_.outerStride(), 0.0, out.data(), v);
  }
  // Row-major out (n x v) is column-major out^T (v x n) = U^T X.
  void ttimes(const RowMatrix& U, RowMatrix& out) {
    const Index m = X_.rows(), n = X_.cols(), v = U.cols();
    out.resize(n, v);
    lapack::gemm('N', 'T', v, n, m, 1.0, U.data(), v, X_.data(), X_.outerStride(), 0.0, out.data(), v);
  }
  bool apply_scores(const RankingLaplacian&, const RowMatrix&, RowMatrix&) { return false; }
  Vector jacobi(const RankingLaplacian& L) const {
    const Index n = X_.cols();
    require(X_.rows() == L.m, "Jacobi diagonal: row count mismatch");
    Vector d = Vector::Zero(n);
    if (L.kind == RankingLaplacian::Kind::Groups) {
      const IndexVector &order = L.rows.order, &start = L.rows.offsets;
      Eigen::RowVectorXd s(n);
      for (Index q = 0; q + 1 < start.size(); ++q) {
        const double c = L.pair_weight[q], nq = L.group_size[q];
        s.setZero();
        for (Index t = start[q]; t < start[q + 1]; ++t) {
          const auto x = X_.row(order[t]);
          d.transpose() += (c * nq) * x.cwiseAbs2();
          s += x;
        }
        d.transpose() -= c * s.cwiseAbs2();
      }
    } else {
      const PreferenceGraph& g = L.graph;
      for (Index e = 0; e < g.n_edges(); ++e) {
        const double w2 = g.weight[e] * g.weight[e];
        d.transpose() += w2 * (X_.row(g.head[e]) - X_.row(g.tail[e])).cwiseAbs2();
      }
    }
    return d.cwiseMax(0.0);
  }

 private:
  RowMatrixCRef X_;
};

// ---------------------------------------------------------------------------------------------
// The CG driver: one CG per output column, products batched over the active columns.
// ---------------------------------------------------------------------------------------------

// Each column of M divided by a power of two near its largest entry (exact); returns those powers (1 for a zero or
// non-finite column).
Vector divide_columns_by_power_of_two(RowMatrix& M) {
  Vector scale = Vector::Ones(M.cols());
  for (Index j = 0; j < M.cols(); ++j) {
    const double t = M.col(j).cwiseAbs().maxCoeff();
    if (t > 0.0 && std::isfinite(t)) {
      int e = 0;
      std::frexp(t, &e);
      scale[j] = std::ldexp(1.0, e);
      M.col(j) /= scale[j];
    }
  }
  return scale;
}

template <class Design>
CgResult run_cg(Design& X, const RankingLaplacian& L, const RowMatrix& Y, const RowMatrix* x0, const CgOptions& o,
                const CgCallback& callback) {
  const Index m = X.rows(), n = X.cols();
  require(L.m == m, "conjugate gradient: the ranking structure has " + std::to_string(L.m) +
                        " rows but X has " + std::to_string(m));
  require(std::isfinite(o.alpha) && o.alpha > 0.0, "alpha must be finite and > 0");
  require(o.tol >= 0.0 && std::isfinite(o.tol), "tol must be finite and >= 0");
  require(o.max_iter >= 0, "max_iter must be >= 0");
  if (L.kind == RankingLaplacian::Kind::Groups) require(Y.rows() == m, "targets must have one row per input");

  RowMatrix target = L.target_vector(Y);  // m x v
  const Index v = target.cols();
  // The solution is linear in the targets: solve for each target column divided by a power of two
  // near its largest entry (exact, so results are bit-identical for ordinary scales) and scale the
  // solution back.  Targets of 1e-200 or 1e200 then neither underflow nor overflow in the norms
  // and r^T z, which would otherwise report convergence on a zero model (or NaN residuals).
  const Vector tscale = divide_columns_by_power_of_two(target);
  RowMatrix B;
  X.ttimes(target, B);  // n x v
  // X^T t too: features of 1e-200 give a right-hand side whose norm underflows to 0 (read as X^T t = 0, a zero model,
  // silently); A = X^T L X + alpha I is left as it is, the solution scales with B
  const Vector bscale = divide_columns_by_power_of_two(B);  // apart from tscale: their product may overflow
  CgResult res;
  res.rhs_norm = B.colwise().norm().transpose();

  RowMatrix Dinv = RowMatrix::Ones(n, 1);  // Jacobi: 1 / (diag(X^T L X) + alpha), n x 1
  if (o.jacobi) Dinv.col(0) = (X.jacobi(L).array() + o.alpha).inverse().matrix();

  RowMatrix W = RowMatrix::Zero(n, v);
  RowMatrix XP, LXP, Q;
  auto apply = [&](const RowMatrix& P, RowMatrix& out) {
    if (!X.apply_scores(L, P, out)) {
      X.times(P, XP);
      L.apply(XP, LXP);
      X.ttimes(LXP, out);
    }
    out += o.alpha * P;
  };
  RowMatrix R = B;
  if (x0 != nullptr) {
    require(x0->rows() == n && x0->cols() == v, "the warm start has the wrong shape");
    W = *x0;
    for (Index j = 0; j < v; ++j) W.col(j) = W.col(j) / tscale[j] / bscale[j];
    if (!W.isZero(0.0)) {
      apply(W, Q);
      R -= Q;
    }
  }
  RowMatrix Z = o.jacobi ? RowMatrix(R.array().colwise() * Dinv.col(0).array()) : R;
  RowMatrix P = Z;
  Vector rz(v), rel(v);
  res.n_iter.setZero(v);
  res.converged.setZero(v);
  std::vector<Index> active;
  for (Index j = 0; j < v; ++j) {
    rz[j] = R.col(j).dot(Z.col(j));
    const double bn = res.rhs_norm[j];
    if (bn == 0.0) {  // X^T b = 0: the solution is exactly zero
      W.col(j).setZero();
      rel[j] = 0.0;
    } else {
      rel[j] = R.col(j).norm() / bn;
    }
    if ((!o.fixed_iterations && rel[j] <= o.tol) || bn == 0.0 || rz[j] == 0.0)
      res.converged[j] = 1;
    else
      active.push_back(j);
  }
  std::vector<Vector> history{rel};
  // The recursively updated residual drifts from b - A w by rounding (about eps cond(A) |b|) and keeps shrinking
  // below it: a column whose recursive residual passes the test is checked on its true residual, and restarted
  // from that residual while restarts still halve it; otherwise it stops at the floor of double precision.
  enum class Check { Converged, Restarted, Floor };
  Vector restarted_at = Vector::Constant(v, std::numeric_limits<double>::infinity());
  RowMatrix Wj, Qj;
  auto check_true_residual = [&](Index j) {
    Wj = W.col(j);
    apply(Wj, Qj);
    R.col(j) = B.col(j) - Qj.col(0);
    rel[j] = R.col(j).norm() / res.rhs_norm[j];
    if (rel[j] <= o.tol) return Check::Converged;
    if (!(rel[j] < 0.5 * restarted_at[j])) return Check::Floor;
    restarted_at[j] = rel[j];
    if (o.jacobi) Z.col(j) = R.col(j).cwiseProduct(Dinv.col(0));
    const double rz_new = o.jacobi ? R.col(j).dot(Z.col(j)) : R.col(j).squaredNorm();
    if (!(rz_new > 0.0)) return Check::Floor;
    rz[j] = rz_new;
    P.col(j) = o.jacobi ? Z.col(j) : R.col(j);
    return Check::Restarted;
  };
  RowMatrix Pact, Qact;
  Index iter = 0;
  bool stop = false;
  while (!active.empty() && iter < o.max_iter && !stop) {
    interrupt::poll();
    const Index a = static_cast<Index>(active.size());
    const bool all = (a == v);
    if (!all) {
      Pact.resize(n, a);
      for (Index c = 0; c < a; ++c) Pact.col(c) = P.col(active[c]);
    }
    apply(all ? P : Pact, Qact);
    std::vector<Index> still;
    // One CG step on column j; w, r, p, q, z, d are that column's vectors (whole contiguous
    // matrices when v == 1, so Eigen vectorizes; strided columns otherwise).
    auto cg_step = [&](Index j, auto&& w, auto&& r, auto&& p, const auto& q, auto&& z, const auto& d) {
      const double pq = p.cwiseProduct(q).sum();
      if (!(pq > 0.0) || !std::isfinite(pq))
        throw LinAlgError("conjugate gradient broke down (p^T A p = " + format_number(pq) +
                          "); the system is not numerically positive definite");
      const double step = rz[j] / pq;
      w += step * p;
      r -= step * q;
      rel[j] = std::sqrt(r.squaredNorm()) / res.rhs_norm[j];
      res.n_iter[j] = iter + 1;
      double rz_new = 0.0;
      if (o.fixed_iterations || rel[j] > o.tol) {
        if (o.jacobi) {
          z = r.cwiseProduct(d);
          rz_new = r.cwiseProduct(z).sum();
        } else {
          rz_new = r.squaredNorm();
        }
      }
      if (rz_new == 0.0) {  // the test passed, or r = 0 exactly: decided on the true residual
        const Check c = check_true_residual(j);
        if (c == Check::Converged) res.converged[j] = 1;
        if (c == Check::Restarted) still.push_back(j);
        return;
      }
      const double beta = rz_new / rz[j];
      rz[j] = rz_new;
      if (o.jacobi)
        p = z + beta * p;
      else
        p = r + beta * p;
      still.push_back(j);
    };
    if (v == 1) {
      cg_step(0, W, R, P, Qact, Z, Dinv);
    } else {
      for (Index c = 0; c < a; ++c) {
        const Index j = active[c];
        cg_step(j, W.col(j), R.col(j), P.col(j), Qact.col(c), Z.col(j), Dinv.col(0));
      }
    }
    ++iter;
    Vector h = Vector::Constant(v, std::numeric_limits<double>::quiet_NaN());
    for (Index j : active) h[j] = rel[j];
    history.push_back(h);
    active.swap(still);
    if (callback) stop = callback(iter, rel);
  }
  if (o.fixed_iterations)
    for (Index j = 0; j < v; ++j) res.converged[j] = rel[j] <= o.tol ? 1 : 0;
  for (Index j = 0; j < v; ++j) {
    W.col(j) *= bscale[j];
    W.col(j) *= tscale[j];
    res.rhs_norm[j] *= bscale[j];
    res.rhs_norm[j] *= tscale[j];
  }
  res.coef = std::move(W);
  res.residual_history.resize(static_cast<Index>(history.size()), v);
  for (Index k = 0; k < static_cast<Index>(history.size()); ++k) res.residual_history.row(k) = history[k].transpose();
  return res;
}

template <class I>
void check_csr(const CsrView<I>& X) {
  require(X.rows >= 0 && X.cols >= 1, "CSR matrix must have at least one column");
  require(X.indptr != nullptr && X.indptr[0] == 0, "CSR indptr must start at 0");
}

}  // namespace

CgResult cg_rankrls_csr32(const CsrView<std::int32_t>& X, const RankingLaplacian& L, const RowMatrix& Y,
                          const RowMatrix* x0, const CgOptions& options, const CgCallback& callback) {
  check_csr(X);
  CsrDesign<std::int32_t> D(X, options.n_threads, options.transpose_copy);
  return run_cg(D, L, Y, x0, options, callback);
}

CgResult cg_rankrls_csr64(const CsrView<std::int64_t>& X, const RankingLaplacian& L, const RowMatrix& Y,
                          const RowMatrix* x0, const CgOptions& options, const CgCallback& callback) {
  check_csr(X);
  CsrDesign<std::int64_t> D(X, options.n_threads, options.transpose_copy);
  return run_cg(D, L, Y, x0, options, callback);
}

CgResult cg_rankrls_dense(RowMatrixCRef X, const RankingLaplacian& L, const RowMatrix& Y, const RowMatrix* x0,
                          const CgOptions& options, const CgCallback& callback) {
  DenseDesign D(X);
  return run_cg(D, L, Y, x0, options, callback);
}

Vector cg_jacobi_diagonal_csr32(const CsrView<std::int32_t>& X, const RankingLaplacian& L) { return jacobi_csr(X, L); }
Vector cg_jacobi_diagonal_csr64(const CsrView<std::int64_t>& X, const RankingLaplacian& L) { return jacobi_csr(X, L); }
Vector cg_jacobi_diagonal_dense(RowMatrixCRef X, const RankingLaplacian& L) { return DenseDesign(X).jacobi(L); }

}  // namespace fastrank
