"""Model files, the svmlight and score readers, fastrank.dask's two passes over the groups and rankboost_path on
unusual inputs: an extended-precision parameter round-trips, edited sparse indices and labels that do not match the
thresholds are refused at load, the line checker names the right line, a Latin-1 comment is a comment, and groups
that change between the passes or a cv without folds are errors naming the cause."""

import numpy as np
import pytest
import scipy.sparse as sp

import fastrank
from test_model_files_cli_and_dask_branches import load_fails, small  # noqa: F401 - small: a fixture
from test_persist import _read, _write


def test_extended_precision_parameter_roundtrips(small, tmp_path):
    """alpha=np.longdouble(...) fits; saving it recursed without end (longdouble.item() is a longdouble)."""
    X, y, g = small
    alpha = np.longdouble(2) / 3
    est = fastrank.RankRLS(alpha=alpha).fit(X, y, g)
    fastrank.save(est, tmp_path / "m")
    back = fastrank.load(tmp_path / "m")
    assert type(back.alpha) is np.longdouble and back.alpha == alpha  # every bit, beyond float64
    assert np.array_equal(back.predict(X), est.predict(X))


def test_out_of_range_sparse_indices_are_refused_at_load(tmp_path):
    """A sparse training matrix kept by a kernel model, its column indices edited beyond the feature count (checksum
    recomputed): the file loaded and the kernel read and wrote outside its row buffers (heap corruption)."""
    rng = np.random.RandomState(0)
    X = sp.random(30, 6, density=0.4, random_state=0, format="csr")
    y = rng.randint(0, 3, 30).astype(float)
    fastrank.save(fastrank.RankRLS(kernel="rbf", basis_vectors=10, random_state=0).fit(X, y), tmp_path / "m")
    h, a = _read(tmp_path / "m")
    key = h["state"]["X_fit_"]["indices"]["$array"]
    # SciPy before 1.14 words it "column index values"
    words = "(column )?ind(ices|ex values) must be"
    for bad, msg in ((10**6, f"{words} < 6"), (-1, f"{words} >= 0")):
        a[key] = a[key].copy()
        a[key][3] = bad
        _write(tmp_path / "edited", h, a)
        with pytest.raises(ValueError, match=rf"corrupted or tampered model file: inconsistent sparse matrix: {msg}"):
            fastrank.load(tmp_path / "edited")


# ----------------------------------------------------------------------------------------------
# svmlight / score files: the line checker reads the bytes as the compiled reader does
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("content,kw,msg", [
    # a Latin-1 comment on line 1 was blamed ("not valid UTF-8") for the problem of line 2
    (b"1 qid:1 1:0.5 # caf\xe9\n2 qid:1 0:1\n", {"zero_based": False},
     r":2: feature index 0 in a file read as 1-based \(zero_based=False\)$"),
    (b"1 qid:1 1:0.5 # caf\xe9\n2 1:1\n", {}, r":2: some lines have a qid: and others do not"),
    # Arabic-Indic digits: Python's int() takes them, the compiled reader does not; the message named no line and
    # quoted the parser's bytes
    ("1 qid:1 \u0661:0.5\n".encode(), {}, r":1: a non-ASCII character outside a comment \(svmlight lines are ASCII\)$"),
])
def test_the_line_checker_names_the_right_line(tmp_path, content, kw, msg):
    load_fails(tmp_path / "data.txt", content, msg, **kw)


def test_a_latin1_comment_in_a_score_file_is_a_comment(tmp_path):
    from fastrank._svmlight import read_scores

    p = tmp_path / "scores.txt"
    p.write_bytes(b"0.5 # caf\xe9\n-1.25\n")
    assert read_scores(p).tolist() == [0.5, -1.25]


# ----------------------------------------------------------------------------------------------
# fastrank.dask: groups read twice (a table of ids and counts, then the statistics)
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("second", [
    np.repeat(np.arange(4), 10) + 100,                            # ids the first pass never saw: raw IndexError
    np.repeat(np.arange(4), [12, 8, 10, 10]),                     # the same ids, other counts: "internal error"
], ids=["new-ids", "other-counts"])
def test_groups_that_change_between_the_passes_are_named(second):
    dask = pytest.importorskip("dask")
    import dask.array as da

    from fastrank.dask import DaskRankRLS

    rng = np.random.RandomState(0)
    X, y = rng.randn(40, 3), rng.randn(40)
    reads = []

    def ids():  # an impure task: the first read gives four groups of 10, later reads something else
        reads.append(1)
        return np.repeat(np.arange(4), 10) if len(reads) == 1 else second

    G = da.from_delayed(dask.delayed(ids, pure=False)(), shape=(40,), dtype=np.int64).rechunk(10)
    with pytest.raises(ValueError, match=r"^groups gave other ids in the second pass over the data than in the first "
                                         r"\(a dask array of impure tasks\?\); compute or persist groups first$"):
        DaskRankRLS().fit(da.from_array(X, chunks=10), da.from_array(y, chunks=10), G)


@pytest.mark.parametrize("cv", [[], "empty-splitter"])
def test_rankboost_path_without_folds_is_an_error(small, cv):
    """No fold: the mean scores were NaN (numpy's 'Mean of empty slice' warning) and n_estimators=1 was refit."""
    X, y, g = small

    class NoSplits:
        def split(self, X, y=None, groups=None):
            return iter(())

    with pytest.raises(ValueError, match=r"^cv gave no \(train, test\) split; give k >= 2, a splitter or \(train, "
                                         r"test\) index arrays$"):
        fastrank.rankboost_path(X, y, 3, g, cv=NoSplits() if cv == "empty-splitter" else cv)


@pytest.mark.parametrize("make", [lambda: fastrank.PRank(), lambda: fastrank.OAPBPM(n_estimators=3, random_state=0)],
                         ids=["prank", "oapbpm"])
def test_labels_that_do_not_match_the_thresholds_are_refused_at_load(small, tmp_path, make):
    """One label dropped from classes_ (checksum recomputed): the file loaded, its zero-row check passed (a zero row
    reaches one rank) and predict raised numpy's IndexError on the rows of the highest rank."""
    X, y, _ = small
    fastrank.save(make().fit(X, y), tmp_path / "m")
    h, a = _read(tmp_path / "m")
    key = h["state"]["classes_"]["$array"]
    a[key] = a[key][:-1]
    h["arrays"][key]["shape"] = h["state"]["classes_"]["shape"] = [a[key].size]
    _write(tmp_path / "m", h, a)
    with pytest.raises(ValueError, match=r"corrupted or tampered model file: the fitted state is inconsistent "
                                         r"\(members_thresholds_ of shape \((1|3), 2\) for 2 labels\)$"):
        fastrank.load(tmp_path / "m")
