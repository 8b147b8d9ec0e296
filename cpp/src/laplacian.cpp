#include "fastrank/laplacian.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "fastrank/errors.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank {

GroupStructure GroupStructure::from_index(GroupIndex groups, VectorCRef pair_weight) {
  const Index q = groups.n_groups();
  require(q >= 1, "group offsets need at least one group");
  require(pair_weight.size() == q, "pair_weight needs one entry per group");
  GroupStructure g;
  static_cast<GroupIndex&>(g) = std::move(groups);
  g.scale.resize(q);
  for (Index k = 0; k < q; ++k) {
    const Index n = g.group_size(k);
    require(n >= 1, "every group must contain at least one row");
    require(std::isfinite(pair_weight[k]) && pair_weight[k] > 0.0, "pair weights must be finite and > 0");
    g.scale[k] = std::sqrt(pair_weight[k] * static_cast<double>(n));
  }
  return g;
}

double n_relevant_pairs(const GroupStructure& g) {
  double pairs = 0.0;
  for (Index q = 0; q < g.n_groups(); ++q) {
    const double n = static_cast<double>(g.group_size(q));
    pairs += n * (n - 1.0) / 2.0;
  }
  return pairs;
}

void apply_sqrt_laplacian(const GroupStructure& g, MatrixRef Y) {
  require(Y.rows() == g.n_rows(), "apply_sqrt_laplacian: row count mismatch");
  for (Index q = 0; q < g.n_groups(); ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    auto block = Y.middleRows(o, n);
    const Eigen::RowVectorXd mean = block.colwise().mean();
    block.rowwise() -= mean;
    block *= g.scale[q];
  }
}

void apply_laplacian(const GroupStructure& g, MatrixRef Y) {
  apply_sqrt_laplacian(g, Y);
  apply_sqrt_laplacian(g, Y);
}

void apply_sqrt_laplacian_both(const GroupStructure& g, MatrixRef K, int n_threads) {
  const Index m = g.n_rows();
  require(K.rows() == m && K.cols() == m, "apply_sqrt_laplacian_both: K must be m x m");
  const Index q = g.n_groups();
  // Row group of each row, for the scale factor.
  Vector row_scale(m);
  for (Index k = 0; k < q; ++k) row_scale.segment(g.offsets[k], g.group_size(k)).setConstant(g.scale[k]);
  // Pass 1 (left factor C): centre each column within every row block.  Column-parallel.
  parallel_for(0, m, n_threads, 64, [&](Index lo, Index hi) {
    for (Index j = lo; j < hi; ++j) {
      double* col = K.col(j).data();
      for (Index k = 0; k < q; ++k) {
        const Index o = g.offsets[k], n = g.offsets[k + 1] - o;
        double s = 0.0;
        for (Index i = o; i < o + n; ++i) s += col[i];
        const double mean = s / static_cast<double>(n);
        for (Index i = o; i < o + n; ++i) col[i] -= mean;
      }
    }
  });
  // Pass 2 (right factor C): centre each row within every column block, then scale by
  // s_{g(i)} s_{g(j)}.  Parallel over column blocks, each with an m-vector of row means.
  parallel_for(0, q, n_threads, 1, [&](Index lo, Index hi) {
    Vector row_mean(m);
    for (Index k = lo; k < hi; ++k) {
      const Index o = g.offsets[k], n = g.offsets[k + 1] - o;
      row_mean.setZero();
      for (Index j = o; j < o + n; ++j) row_mean += K.col(j);
      row_mean /= static_cast<double>(n);
      for (Index j = o; j < o + n; ++j) {
        double* col = K.col(j).data();
        const double sj = g.scale[k];
        for (Index i = 0; i < m; ++i) col[i] = (col[i] - row_mean[i]) * row_scale[i] * sj;
      }
    }
  });
}

PreferenceGraph PreferenceGraph::from_edges(Index n_vertices, IndexVectorCRef head, IndexVectorCRef tail,
                                            VectorCRef weight, MatrixCRef target) {
  const Index l = head.size();
  require(tail.size() == l && weight.size() == l && target.rows() == l,
          "preference arrays must have one entry per edge");
  PreferenceGraph g;
  g.n_vertices = n_vertices;
  g.head = head;
  g.tail = tail;
  g.weight = weight;
  g.target = target;
  return g;
}

void PreferenceGraph::validate() const {
  const Index l = n_edges();
  require(tail.size() == l && weight.size() == l && target.rows() == l,
          "preference graph arrays must have one entry per edge");
  require(l >= 1, "the preference graph has no edges");
  for (Index e = 0; e < l; ++e) {
    require(head[e] >= 0 && head[e] < n_vertices && tail[e] >= 0 && tail[e] < n_vertices,
            "preference " + std::to_string(e) + " refers to a row index outside [0, " + std::to_string(n_vertices) +
                ")");
    require(head[e] != tail[e],
            "preference " + std::to_string(e) + " is a self-loop (" + std::to_string(head[e]) + " over itself)");
    require(std::isfinite(weight[e]) && weight[e] > 0.0, "preference weights must be finite and positive");
  }
  require(target.allFinite(), "preference targets must be finite");
}

Matrix graph_laplacian(const PreferenceGraph& graph) {
  const Index m = graph.n_vertices;
  Matrix L = Matrix::Zero(m, m);
  for (Index e = 0; e < graph.n_edges(); ++e) {
    const Index h = graph.head[e], t = graph.tail[e];
    const double w2 = graph.weight[e] * graph.weight[e];
    L(h, h) += w2;
    L(t, t) += w2;
    L(h, t) -= w2;
    L(t, h) -= w2;
  }
  return L;
}

Matrix graph_incidence_times_targets(const PreferenceGraph& graph) {
  Matrix b = Matrix::Zero(graph.n_vertices, graph.target.cols());
  for (Index e = 0; e < graph.n_edges(); ++e) {
    // M_{h,e} = w_e, M_{t,e} = -w_e, N_e = w_e z_e  =>  (M N)_h += w_e^2 z_e.
    const double w2 = graph.weight[e] * graph.weight[e];
    b.row(graph.head[e]) += w2 * graph.target.row(e);
    b.row(graph.tail[e]) -= w2 * graph.target.row(e);
  }
  return b;
}

Matrix graph_incidence_transpose_times(const PreferenceGraph& graph, MatrixCRef Y) {
  require(Y.rows() == graph.n_vertices, "incidence product: row count mismatch");
  Matrix out(graph.n_edges(), Y.cols());
  for (Index e = 0; e < graph.n_edges(); ++e)
    out.row(e) = graph.weight[e] * (Y.row(graph.head[e]) - Y.row(graph.tail[e]));
  return out;
}

Matrix graph_incidence_times(const PreferenceGraph& graph, MatrixCRef U) {
  require(U.rows() == graph.n_edges(), "incidence product: row count mismatch");
  Matrix out = Matrix::Zero(graph.n_vertices, U.cols());
  for (Index e = 0; e < graph.n_edges(); ++e) {
    out.row(graph.head[e]) += graph.weight[e] * U.row(e);
    out.row(graph.tail[e]) -= graph.weight[e] * U.row(e);
  }
  return out;
}

}  // namespace fastrank
