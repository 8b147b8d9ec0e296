#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <optional>
#include <vector>

#include "fastrank/errors.hpp"
#include "fastrank/measures.hpp"
#include "groups_arg.hpp"

namespace py = pybind11;
using namespace fastrank;

namespace {
inline void ensure(bool ok, const char* message) {
  if (!ok) throw std::invalid_argument(message);
}

using DArr = py::array_t<double, py::array::c_style>;
using I64Arr = py::array_t<std::int64_t, py::array::c_style>;
using I32Arr = py::array_t<std::int32_t, py::array::c_style>;

void check_1d(const py::array& a, Index m, const char* name) {
  if (!(a.ndim() == 1 && a.shape(0) == m)) throw std::invalid_argument(std::string(name) + " must be 1-D of the same length");
}

py::tuple ranks_result(I32Arr& rank, const std::vector<double>& values) {
  DArr v(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), v.mutable_data());
  return py::make_tuple(rank, v);
}
}  // namespace

void bind_measures(py::module_& m) {
  m.def(
      "dense_ranks_small",
      [](DArr y, Index max_distinct) -> py::object {
        ensure(y.ndim() == 1, "y must be 1-D");
        const Index n = y.shape(0);
        const double* yv = y.data();
        bool finite = true;
        for (Index i = 0; i < n; ++i) finite &= std::isfinite(yv[i]);
        ensure(finite, "y must be finite");  // NaN has no rank (its conversion to an integer is undefined)
        ensure(max_distinct >= 0, "max_distinct must be >= 0");
        I32Arr rank(n);
        std::vector<double> values;
        bool ok;
        {
          py::gil_scoped_release release;
          ok = dense_ranks_small(y.data(), n, max_distinct, rank.mutable_data(), values);
        }
        if (!ok) return py::none();
        return ranks_result(rank, values);
      },
      py::arg("y").noconvert(), py::arg("max_distinct"),
      "(ranks int32, sorted distinct values) of y without sorting, or None if y has more than "
      "max_distinct distinct values (integer-valued y in a modest range always succeeds).");
  m.def(
      "dense_ranks_from_order",
      [](DArr y, I64Arr order) -> py::tuple {
        ensure(y.ndim() == 1, "y must be 1-D");
        const Index n = y.shape(0);
        check_1d(order, n, "order");
        I32Arr rank(n);
        std::vector<double> values;
        {
          py::gil_scoped_release release;
          dense_ranks_from_order(y.data(), order.data(), n, rank.mutable_data(), values);
        }
        return ranks_result(rank, values);
      },
      py::arg("y").noconvert(), py::arg("order").noconvert(),
      "(ranks int32, sorted distinct values) of y given an ascending argsort of y.");
  m.def(
      "pair_statistics",
      [](DArr f, I64Arr f_order, I32Arr yrank, DArr values, py::handle order, py::handle offsets, bool weighted,
         int n_threads) {
        ensure(f.ndim() == 1, "f must be 1-D");
        const Index n = f.shape(0);
        check_1d(f_order, n, "f_order");
        check_1d(yrank, n, "yrank");
        ensure(values.ndim() == 1, "values must be 1-D");
        const Index K = values.shape(0);
        bindings::GroupsArg groups(order, offsets, n);
        py::gil_scoped_release release;
        const std::int32_t* r = yrank.data();
        for (Index i = 0; i < n; ++i) ensure(r[i] >= 0 && r[i] < K, "yrank out of range");
        // a repeated row would overflow its group's buffer in the counting sort
        std::vector<unsigned char> seen(static_cast<size_t>(n), 0);
        const std::int64_t* o = f_order.data();
        bool permutation = true;
        for (Index k = 0; k < n && permutation; ++k) {
          permutation = o[k] >= 0 && o[k] < n && !seen[static_cast<size_t>(o[k])];
          if (permutation) seen[static_cast<size_t>(o[k])] = 1;
        }
        ensure(permutation, "f_order must be a permutation of 0..n-1");
        return pair_statistics(f.data(), f_order.data(), yrank.data(), values.data(), K, groups.index(),
                               groups.row_group_if_several(), weighted, n_threads);
      },
      py::arg("f").noconvert(), py::arg("f_order").noconvert(), py::arg("yrank").noconvert(),
      py::arg("values").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("weighted"),
      py::arg("n_threads"),
      "Per-group pair statistics (n_groups, 6): pairs, relevant, discordant, tied_relevant, "
      "w_discordant, w_tied.");
  m.def(
      "dcg_statistics",
      [](DArr y, DArr f, py::handle order, py::handle offsets, Index k, int gain, int n_threads) {
        ensure(y.ndim() == 1 && f.ndim() == 1 && y.shape(0) == f.shape(0), "y and f must be 1-D, same length");
        ensure(gain == 0 || gain == 1, "gain must be 0 (linear) or 1 (exponential)");
        bindings::GroupsArg groups(order, offsets, y.shape(0));
        py::gil_scoped_release release;
        return dcg_statistics(y.data(), f.data(), groups.index(), groups.row_group_if_several(), k, gain, n_threads);
      },
      py::arg("y").noconvert(), py::arg("f").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("k"),
      py::arg("gain"), py::arg("n_threads"),
      "Per-group (DCG, ideal DCG) with tie-averaged gains; gain 0 linear, 1 exponential.");
  m.def(
      "dominance_sums",
      [](DArr a, DArr b, py::handle order, py::handle offsets, int n_threads, std::optional<DArr> b_less) {
        ensure(a.ndim() == 1 && b.ndim() == 1 && a.shape(0) == b.shape(0), "a and b must be 1-D, same length");
        ensure(!b_less || (b_less->ndim() == 1 && b_less->shape(0) == b.shape(0)), "b_less must be 1-D like b");
        const bindings::GroupsArg groups(order, offsets, a.shape(0));
        py::gil_scoped_release release;
        return dominance_sums(a.data(), b.data(), groups.index(), n_threads, b_less ? b_less->data() : nullptr);
      },
      py::arg("a").noconvert(), py::arg("b").noconvert(), py::arg("order"), py::arg("offsets"),
      py::arg("n_threads"), py::arg("b_less") = py::none(),
      "Per-group sums over pairs with a_i > a_j and b_i > b_j (n_groups, 12): count, sum da, sum db, "
      "sum da^2, sum db^2, sum da*db, then the magnitude of each sum's expanded terms (its rounding scale); "
      "with b_less the second values are b - b_less.");
  m.def(
      "threshold_pair_sums",
      [](DArr z, py::handle order, py::handle offsets, double eps, int n_threads) {
        ensure(z.ndim() == 1, "z must be 1-D");
        const bindings::GroupsArg groups(order, offsets, z.shape(0));
        py::gil_scoped_release release;
        return threshold_pair_sums(z.data(), groups.index(), eps, n_threads);
      },
      py::arg("z").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("eps"), py::arg("n_threads"),
      "Per-group sums over pairs with |z_i - z_j| > eps (n_groups, 3): count, sum (d - eps), sum (d - eps)^2.");
}
