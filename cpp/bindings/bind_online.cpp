#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "fastrank/errors.hpp"
#include "fastrank/online_mprank.hpp"
#include "fastrank/perceptron.hpp"

namespace py = pybind11;
using namespace fastrank;

namespace {
OapParams make_params(int k, double tau, std::uint64_t seed, std::int64_t t0, int variant, int n_threads) {
  OapParams p;
  p.k = k;
  p.tau = tau;
  p.seed = seed;
  p.t0 = t0;
  require(variant >= 0 && variant <= 2, "variant must be 0 (bpm), 1 (bagging) or 2 (voted)");
  p.variant = static_cast<OapVariant>(variant);
  p.n_threads = n_threads;
  return p;
}

// The on-line MPRank iteration on one representation of Kt (its matrix, or the centred features).
template <class Operand>
void def_mprank_online(py::module_& m, const char* name,
                       MPRankOnlineResult (*solve)(Operand, VectorCRef, double, double, bool, int, double,
                                                   Eigen::Ref<Vector>),
                       const char* operand, const char* doc) {
  m.def(
      name,
      [solve](Operand K, VectorCRef yt, double C, double eta, bool sequential, int max_iter, double tol,
              Eigen::Ref<Vector> alpha) {
        MPRankOnlineResult r;
        {
          py::gil_scoped_release release;
          r = solve(K, yt, C, eta, sequential, max_iter, tol, alpha);
        }
        return py::make_tuple(r.n_iter, r.converged, r.costs);
      },
      py::arg(operand).noconvert(), py::arg("yt").noconvert(), py::arg("C"), py::arg("eta"), py::arg("sequential"),
      py::arg("max_iter"), py::arg("tol"), py::arg("alpha").noconvert(), doc);
}
}  // namespace

void bind_online(py::module_& m) {
  m.def(
      "oap_linear_fit",
      [](RowMatrixCRef X, IndexVectorCRef y, int k, double tau, std::uint64_t seed, std::int64_t t0, int variant,
         int n_threads, RowMatrixRef W, RowMatrixRef C, IndexVectorRef V) {
        return oap_linear_fit(X, y, make_params(k, tau, seed, t0, variant, n_threads), W, C, V);
      },
      py::arg("X").noconvert(), py::arg("y").noconvert(), py::arg("k"), py::arg("tau"), py::arg("seed"),
      py::arg("t0"), py::arg("variant"), py::arg("n_threads"), py::arg("W").noconvert(), py::arg("C").noconvert(),
      py::arg("V").noconvert(), py::call_guard<py::gil_scoped_release>(),
      "One pass of the linear OAP ensemble (PRank: one member, tau=1); W, C, V updated in place. "
      "Returns the ensemble's on-line rank losses (int32).");
  m.def(
      "oap_kernel_fit",
      [](RowMatrixCRef X, IndexVectorCRef y, IndexVectorCRef src, int k, double tau, std::uint64_t seed,
         std::int64_t t0, int variant, int n_threads, int kind, double gamma, double degree, double coef0,
         bool precomputed, std::int64_t budget, const RowMatrix& A, const RowMatrix& sv_X, const IndexVector& sv_time,
         const IndexVector& sv_src, RowMatrixRef C, IndexVectorRef V) {
        KernelSpec spec;
        spec.type = static_cast<KernelType>(kind);
        spec.gamma = gamma;
        spec.degree = degree;
        spec.coef0 = coef0;
        KernelOapState st{A, sv_X, sv_time, sv_src};
        IntVector loss;
        {
          py::gil_scoped_release release;
          loss = oap_kernel_fit(X, y, src, make_params(k, tau, seed, t0, variant, n_threads), spec, precomputed,
                                budget, st, C, V);
        }
        return py::make_tuple(loss, st.A, st.sv_X, st.sv_time, st.sv_src);
      },
      py::arg("X").noconvert(), py::arg("y").noconvert(), py::arg("src").noconvert(), py::arg("k"), py::arg("tau"),
      py::arg("seed"), py::arg("t0"), py::arg("variant"), py::arg("n_threads"), py::arg("kind"), py::arg("gamma"),
      py::arg("degree"), py::arg("coef0"), py::arg("precomputed"), py::arg("budget"), py::arg("A"),
      py::arg("sv_X"), py::arg("sv_time"), py::arg("sv_src"), py::arg("C").noconvert(), py::arg("V").noconvert(),
      "One pass of the kernel OAP ensemble; C, V updated in place. Returns (losses, A, sv_X, sv_time, sv_src).");
  m.def(
      "widrow_hoff_fit",
      [](RowMatrixCRef X, IndexVectorCRef y, int k, double eta, bool fit_intercept, Eigen::Ref<Vector> w, double b,
         bool normalized) {
        require(k >= 1 && (y.size() == 0 || (y.minCoeff() >= 1 && y.maxCoeff() <= k)), "y must hold ranks in 1..k");
        IntVector loss;
        {
          py::gil_scoped_release release;
          loss = widrow_hoff_fit(X, y, k, eta, fit_intercept, w, b, normalized);
        }
        return py::make_tuple(loss, b);
      },
      py::arg("X").noconvert(), py::arg("y").noconvert(), py::arg("k"), py::arg("eta"), py::arg("fit_intercept"),
      py::arg("w").noconvert(), py::arg("b"), py::arg("normalized") = false,
      "One Widrow-Hoff pass (normalized: step eta / (||x||^2 + fit_intercept)); w updated in place. Returns "
      "(losses, b).");
  m.def(
      "oap_draws",
      [](std::uint64_t seed, std::int64_t n_members, std::int64_t t0, std::int64_t T, double tau) {
        // tau becomes an integer threshold: NaN or a value outside (0, 1] has none
        require(tau > 0.0 && tau <= 1.0, "tau must lie in (0, 1]");
        require(n_members >= 0 && T >= 0, "n_members and T must be >= 0");
        Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out(n_members, T);
        const std::uint64_t thr = oap_tau_threshold(tau);
        for (std::int64_t j = 0; j < n_members; ++j) {
          const std::uint64_t key = oap_member_key(seed, j);
          for (std::int64_t t = 0; t < T; ++t) out(j, t) = oap_draw(key, t0 + t, thr);
        }
        return out;
      },
      py::arg("seed"), py::arg("n_members"), py::arg("t0"), py::arg("T"), py::arg("tau"),
      "The Bernoulli(tau) draws b(j, t0 + t) the OAP core uses (for tests and inspection).");
  def_mprank_online<MatrixCRef>(m, "mprank_online", mprank_online, "Kt",
                                "On-line MPRank dual iteration on the centred kernel matrix Kt (alpha updated in "
                                "place). Returns (n_iter, converged, costs).");
  def_mprank_online<RowMatrixCRef>(m, "mprank_online_linear", mprank_online_linear, "Xc",
                                   "On-line MPRank dual iteration for Kt = Xc Xc^T of the centred features Xc, "
                                   "without forming Kt (alpha updated in place). Returns (n_iter, converged, costs).");
}
