// Laplacians of the preference graphs RankRLS learns from (Pahikkala et al. 2009, eqs. 12-14, 25).
//
// Scoring setting.  Relevant pairs are all pairs inside each group (object ranking = one group).
// Rows are in group order (position p holds row order[p] of the GroupIndex), so group q is the
// contiguous block [offsets[q], offsets[q+1]).  With pair weight c_q, block q of L is
//   L_q = c_q (n_q I - 1 1^T)                       (eq. 25: D - P P^T, c_q = 1)
// and its symmetric square root is S_q = s_q C_q with C_q = I - 1 1^T / n_q (centering) and
// s_q = sqrt(c_q n_q):  s_q = sqrt(n_q) for the paper's unweighted Laplacian (c_q = 1); the
// Python layer chooses c_q (e.g. 1/n_q, or 1/#pairs of the group as at the end of Sect. 2.4).  S never exists as a matrix: applying it is a
// block-centering pass, O(m v) on vectors and O(m^2) on a kernel matrix.
//
// Preference graph.  Edges e = (head preferred over tail) with weight w_e and target z_e; M is the
// weighted oriented incidence matrix (eq. 12), L = M M^T, N = (w_e z_e) (eq. 13), b = M N.
#pragma once
#include "fastrank/groups.hpp"
#include "fastrank/types.hpp"

namespace fastrank {

// A GroupIndex with the per-group scale s_q of S; rows of the data it describes are in group order.
struct GroupStructure : GroupIndex {
  Vector scale;  // size q: s_q

  // s_q = sqrt(c_q n_q) from the per-group pair weights c_q > 0; every group needs a row.
  static GroupStructure from_index(GroupIndex groups, VectorCRef pair_weight);
};

// Y <- S Y (each column block-centered and scaled), O(m v).
void apply_sqrt_laplacian(const GroupStructure& g, MatrixRef Y);
// Y <- L Y = S (S Y).
void apply_laplacian(const GroupStructure& g, MatrixRef Y);
// K <- S K S for a symmetric m x m K, in place, O(m^2), threaded.
void apply_sqrt_laplacian_both(const GroupStructure& g, MatrixRef K, int n_threads);
// Number of relevant (unordered) pairs: sum_q n_q (n_q - 1) / 2.
double n_relevant_pairs(const GroupStructure& g);

struct PreferenceGraph {
  Index n_vertices = 0;
  IndexVector head;  // preferred
  IndexVector tail;  // other
  Vector weight;     // w_e > 0
  Matrix target;     // l x v: z_e per output

  Index n_edges() const { return head.size(); }
  // Copies the edge arrays; throws std::invalid_argument unless they have one entry per edge.
  static PreferenceGraph from_edges(Index n_vertices, IndexVectorCRef head, IndexVectorCRef tail, VectorCRef weight,
                                    MatrixCRef target);
  // Checks ranges, self-loops and finite positive weights; throws std::invalid_argument.
  void validate() const;
};

// Dense L = M M^T (m x m), O(m^2 + l): four updates per edge (eq. 18).
Matrix graph_laplacian(const PreferenceGraph& graph);
// b = M N (m x v), O(l v).
Matrix graph_incidence_times_targets(const PreferenceGraph& graph);
// M^T Y (l x v) for Y (m x v): row e is w_e (Y_head - Y_tail).
Matrix graph_incidence_transpose_times(const PreferenceGraph& graph, MatrixCRef Y);
// M U (m x v) for U (l x v).
Matrix graph_incidence_times(const PreferenceGraph& graph, MatrixCRef U);

}  // namespace fastrank
