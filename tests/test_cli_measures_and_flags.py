"""The command-line tool on svmlight/LETOR files: the numbers it prints and the flags it is given, against plain
implementations of the definitions."""

import json

import numpy as np
import pytest

import fastrank
from fastrank import cli
from fastrank.datasets import load_svmlight


def _write(path, y, q, X):
    with open(path, "w") as fh:
        for yi, qi, row in zip(y, q, X):
            fh.write(f"{yi:g} qid:{qi} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row)) + "\n")
    return path


def _run(argv, capsys):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _err_oracle(y, s, k, gmax):
    """ERR@k of one query (Chapelle et al. 2009): R(g) = (2^g - 1) / 2^gmax, the rows by decreasing score."""
    total, p = 0.0, 1.0
    for r, i in enumerate(np.argsort(-s)[:k], start=1):
        R = (2.0 ** y[i] - 1.0) / 2.0 ** gmax
        total += p * R / r
        p *= 1.0 - R
    return total


def test_evaluate_per_query_err_keeps_the_files_grade_scale(tmp_path, capsys):
    # a query evaluated alone used its own largest grade as g_max: per-query ERR disagreed with the mean line
    rng = np.random.default_rng(3)
    q = np.repeat(np.arange(6), 7)
    y = rng.integers(0, 3, q.size).astype(float)
    y[q == 0] = rng.integers(0, 2, 7)  # grades 0..1 in a file whose scale goes up to 4
    y[np.flatnonzero(q == 0)[0]] = 1.0
    y[q == 5] = 4.0 * (np.arange(7) == 2)
    data = _write(tmp_path / "d.txt", y, q, rng.normal(size=(q.size, 2)))
    s = rng.normal(size=q.size)  # no ties
    np.savetxt(tmp_path / "s.txt", s)
    code, out, err = _run(["evaluate", "--per-query", "--format", "json", "-m", "err@3", "-m", "err", data,
                           tmp_path / "s.txt"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    for label, k in (("err@3", 3), ("err", q.size)):
        want = [_err_oracle(y[q == g], s[q == g], k, y.max()) for g in range(6)]
        got = [doc["per_query"][str(g)][label] for g in range(6)]
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert doc["mean"][label] == pytest.approx(np.mean(want), rel=1e-12)


@pytest.fixture
def graded_file(tmp_path):
    rng = np.random.default_rng(0)
    q = np.repeat(np.arange(8), 6)
    X = rng.normal(size=(q.size, 4))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=q.size) + 1), 0, 3)
    return _write(tmp_path / "train.txt", y, q, X)


def test_train_model_rankrlscv_takes_the_cross_validation_flags(graded_file, tmp_path, capsys):
    # --model RankRLSCV ignored --cv, -m and --alphas silently: leave-query-out AUC over the default grid ran instead
    model = tmp_path / "m.frk"
    code, _, err = _run(["train", "--model", "RankRLSCV", "--normalize", "none", "--cv", "3", "-m", "map@5",
                         "--alphas", "0.1,10,1000", graded_file, model], capsys)
    assert code == 0 and "(map@5, cv=3 folds of whole queries)" in err, err
    X, y, q = load_svmlight(graded_file)
    ref = fastrank.RankRLSCV(alphas=[0.1, 10, 1000], cv=3, scoring="map@5").fit(X.toarray(), y, q)
    got = fastrank.load(model)
    assert got.cv_results_["scoring"] == "map@5"
    np.testing.assert_array_equal(got.cv_results_["alphas"], [0.1, 10, 1000])
    np.testing.assert_allclose(got.cv_results_["scores"], ref.cv_results_["scores"], rtol=1e-12)


@pytest.mark.parametrize("argv, message", [
    (["--model", "RankSVM", "--cv", "3"], "--cv sets the cross-validation of fastrank cv"),
    (["-m", "map"], "RankRLS has no parameter 'scoring'"),
    (["--model", "MPRankCV", "--alphas", "1,10"], "--alphas sets the cross-validation"),
    (["--model", "RankRLSCV", "--cv", "3", "--param", "cv=4"], "--cv and --param cv=... both set RankRLSCV's cv"),
], ids=["ranksvm-cv", "rankrls-scoring", "mprankcv-alphas", "twice"])
def test_train_refuses_cross_validation_flags_it_would_not_use(argv, message, graded_file, tmp_path, capsys):
    # these flags were silently unused: the model trained as if they had not been given
    code, _, err = _run(["train", *argv, graded_file, tmp_path / "m.frk"], capsys)
    assert code == 2 and message in err, err
    assert not (tmp_path / "m.frk").exists()


def test_evaluate_default_measures_on_signed_labels(tmp_path, capsys):
    # svm_light's -1/+1 labels with qid: the default NDCG failed ("needs non-negative relevance labels"), exit 1
    rng = np.random.default_rng(1)
    q = np.repeat(np.arange(5), 4)
    y = np.where(rng.random(q.size) < 0.5, -1.0, 1.0)
    y[::4], y[1::4] = -1.0, 1.0  # every query has a pair
    data = _write(tmp_path / "d.txt", y, q, rng.normal(size=(q.size, 2)))
    s = np.round(rng.normal(size=q.size), 1)
    s[5] = s[4]  # a tied pair counts 1/2
    np.savetxt(tmp_path / "s.txt", s)
    code, out, err = _run(["evaluate", data, tmp_path / "s.txt"], capsys)
    assert code == 0, err
    label, value = out.split()
    want = []
    for g in range(5):
        yq, sq = y[q == g], s[q == g]
        pairs = [(i, j) for i in range(4) for j in range(4) if yq[i] > yq[j]]
        want.append(np.mean([(sq[i] < sq[j]) + 0.5 * (sq[i] == sq[j]) for i, j in pairs]))
    assert label == "disagreement" and float(value) == pytest.approx(np.mean(want), abs=1e-6)


def test_folds_without_query_ids_are_not_reported_as_whole_queries(tmp_path, capsys):
    # a file without qid: is split into folds of rows; train and cv said "folds of whole queries" /
    # "queries kept together"
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 3))
    data = tmp_path / "d.txt"
    data.write_text("".join(f"{v:.3f} 1:{a:.4f} 2:{b:.4f} 3:{c:.4f}\n" for v, (a, b, c) in zip(X @ [1, 2, 3], X)))
    code, _, err = _run(["train", "--alpha", "auto", "--cv", "3", data, tmp_path / "m.frk"], capsys)
    assert code == 0 and "cv=3 folds of rows)" in err, err
    code, out, err = _run(["cv", "--cv", "3", data], capsys)
    assert code == 0 and out.startswith("# exact 3-fold cross-validation") and "queries" not in out, out


def test_predict_warns_when_per_query_normalisation_has_no_queries(graded_file, tmp_path, capsys):
    # a model trained on per-query min-max features scored a file without qid: after normalising all its rows as one
    # query -- other features than the model saw, other rankings -- and said so only under -v
    assert _run(["train", "--normalize", "query-minmax", graded_file, tmp_path / "m.frk"], capsys)[0] == 0
    bare = tmp_path / "bare.txt"
    lines = graded_file.read_text().splitlines(keepends=True)
    bare.write_text("".join(line.replace(line.split()[1] + " ", "", 1) for line in lines))
    code, out, err = _run(["predict", tmp_path / "m.frk", bare], capsys)
    assert code == 0 and len(out.split()) == 48
    assert "warning: the model normalises features per query (query-minmax)" in err, err
    assert _run(["predict", "-q", tmp_path / "m.frk", bare], capsys)[2] == ""


def test_cv_takes_the_polynomial_kernels_degree_and_offset(graded_file, capsys):
    # cv offered --kernel poly and --gamma but not --degree / --coef0 (a usage error): only degree 3, offset 1
    code, out, err = _run(["cv", "--normalize", "none", "--kernel", "poly", "--degree", "2", "--coef0", "0.5",
                           "--alphas", "0.1,10", graded_file], capsys)
    assert code == 0, err
    X, y, q = load_svmlight(graded_file)
    ref = fastrank.RankRLSCV(alphas=[0.1, 10], kernel="poly", degree=2, coef0=0.5, scoring="ndcg@10")
    ref.fit(X.toarray(), y, q)
    got = [float(line.split("\t")[1]) for line in out.splitlines()[2:4]]
    np.testing.assert_allclose(got, ref.cv_results_["scores"], atol=5e-7)


def test_features_too_large_to_normalise_are_a_data_error(graded_file, tmp_path, capsys):
    # a feature range overflowing float64 inside a query reached the user as a Python traceback (train and predict);
    # query z-scores take each query's columns in units of a power of two, so there the same file trains
    norm = "query-minmax"
    big = tmp_path / "big.txt"
    big.write_text("1 qid:1 1:1e308 2:1\n0 qid:1 1:-1e308 2:2\n2 qid:2 1:3 2:0\n1 qid:2 1:1 2:1\n")
    assert _run(["train", "--normalize", "query-zscore", big, tmp_path / "z.frk"], capsys)[0] == 0
    code, _, err = _run(["train", "--normalize", norm, big, tmp_path / "b.frk"], capsys)
    assert code == 1 and f"error: cannot normalise the features (--normalize {norm}): X is too large" in err, err
    assert _run(["train", "-q", "--normalize", norm, graded_file, tmp_path / "m.frk"], capsys)[0] == 0
    code, _, err = _run(["predict", tmp_path / "m.frk", big], capsys)
    assert code == 1 and "cannot normalise the features" in err and "Traceback" not in err, err


def test_cross_validation_default_on_a_single_query_file(tmp_path, capsys):
    # one query (qid:1 on every line): the default leave-query-out failed ("needs groups with at least two distinct
    # ids") where RankRLSCV(cv=None) falls back to leave-pair-out
    rng = np.random.default_rng(4)
    X = rng.normal(size=(9, 2))
    y = np.round(X @ [1.0, -1.0] + rng.normal(size=9))
    data = _write(tmp_path / "one.txt", y, np.ones(9, dtype=int), X)
    code, out, err = _run(["cv", "--normalize", "none", "--alphas", "0.1,10", data], capsys)
    assert code == 0 and "leave-pair-out" in out, err
    X, y, q = load_svmlight(data)
    ref = fastrank.RankRLSCV(alphas=[0.1, 10], scoring="disagreement").fit(X.toarray(), y, q)
    assert ref.cv_results_["cv"] == "lpo"
    got = [float(line.split("\t")[1]) for line in out.splitlines()[2:4]]
    np.testing.assert_allclose(got, ref.cv_results_["scores"], atol=5e-7)


def test_a_precomputed_kernel_file_is_not_normalised(tmp_path, capsys):
    # --normalize auto min-maxed the kernel matrix per query (no longer a kernel: "must be symmetric" blamed the file)
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(0)
    X, Xt = rng.normal(size=(30, 3)), rng.normal(size=(12, 3))
    y, q = np.round(X @ [1.0, 2.0, 0.0] + rng.normal(size=30)), np.repeat(np.arange(5), 6)
    dump_svmlight_file(X @ X.T + 5.0, y, str(tmp_path / "K.txt"), query_id=q, zero_based=False)
    dump_svmlight_file(Xt @ X.T + 5.0, np.zeros(12), str(tmp_path / "Kt.txt"), query_id=np.repeat([0, 1], 6),
                       zero_based=False)
    code, _, err = _run(["train", "--param", "kernel=precomputed", tmp_path / "K.txt", tmp_path / "k.frk"], capsys)
    assert code == 0, err
    code, out, err = _run(["predict", tmp_path / "k.frk", tmp_path / "Kt.txt"], capsys)
    K, _, _ = load_svmlight(tmp_path / "K.txt")
    Kt, _, _ = load_svmlight(tmp_path / "Kt.txt", n_features=30)
    ref = fastrank.RankRLS(kernel="precomputed").fit(K.toarray(), y, q).predict(Kt.toarray())
    np.testing.assert_allclose(np.array(out.split(), dtype=float), ref, rtol=1e-12)
    code, _, err = _run(["train", "--normalize", "zscore", "--param", "kernel=precomputed", tmp_path / "K.txt",
                         tmp_path / "z.frk"], capsys)
    assert code == 2 and "--normalize zscore would change the values of a precomputed kernel" in err, err


@pytest.mark.parametrize("flags", [["--n-estimators", "0"], ["--param", "tau=2"], ["--param", "budget=0"]])
def test_a_bad_model_parameter_is_a_usage_error_whichever_flag_gives_it(tmp_path, capsys, flags):
    train = tmp_path / "train.txt"
    _write(train, [1, 0, 2, 0], [1, 1, 2, 2], np.arange(8.0).reshape(4, 2))
    code, _, err = _run(["train", "-q", "-M", "OAPBPM", *flags, train, tmp_path / "m.frk"], capsys)
    assert code == 2 and "parameter of OAPBPM must be" in err  # was exit 1, "fitting OAPBPM failed"
    assert not (tmp_path / "m.frk").exists()


def test_fractional_grades_for_an_ordinal_learner_are_named(tmp_path, capsys):
    train = tmp_path / "half.txt"
    _write(train, [1.5, 0, 0.5, 0], [1, 1, 2, 2], np.arange(8.0).reshape(4, 2))
    code, _, err = _run(["train", "-q", "-M", "PRank", train, tmp_path / "m.frk"], capsys)
    assert code == 1 and "y holds continuous values (e.g. 0.5): the on-line ordinal learners rank into ordered " \
                         "classes" in err and "classifier" not in err  # not scikit-learn's classifier text


def _write_noqid(path, y, X):
    with open(path, "w") as fh:
        for yi, row in zip(y, X):
            fh.write(f"{yi:g} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row)) + "\n")
    return path


def test_a_model_without_query_ids_scores_a_row_alike_in_any_file(tmp_path, capsys):
    """--normalize auto without qid keeps the training statistics (zscore): a per-query normaliser scaled every
    predict file by its own min and max, so the same row scored differently in each file (a file of one row: 0)."""
    rng = np.random.default_rng(3)
    X, y = rng.random((12, 3)), rng.integers(0, 3, 12)
    train = _write_noqid(tmp_path / "noq.txt", y, X)
    assert _run(["train", "-q", train, tmp_path / "m.frk"], capsys)[0] == 0
    whole = np.array(_run(["predict", tmp_path / "m.frk", train], capsys)[1].split(), float)
    for rows in ([0, 1], [0]):
        part = _write_noqid(tmp_path / "part.txt", y[rows], X[rows])
        got = np.array(_run(["predict", tmp_path / "m.frk", part], capsys)[1].split(), float)
        np.testing.assert_allclose(got, whole[rows], rtol=1e-12)
    code, _, err = _run(["train", "--normalize", "query-minmax", train, tmp_path / "m2.frk"], capsys)
    assert code == 0 and "fastrank train: warning: --normalize query-minmax without query ids" in err


def test_cli_formats_files_and_flags(tmp_path, capsys):
    data = tmp_path / "q.txt"
    rng = np.random.default_rng(3)
    _write(data, rng.integers(0, 3, 12), np.repeat([1, 2, 3], 4), rng.random((12, 3)))
    model = tmp_path / "m.frk"
    assert _run(["train", "-q", "--sparse", data, model], capsys)[0] == 0  # auto is none under --sparse
    assert _run(["train", "-q", data, model], capsys)[0] == 0
    assert _run(["predict", "-q", "-o", tmp_path / "s.gz", model, data], capsys)[0] == 0
    import gzip
    with gzip.open(tmp_path / "s.gz", "rt") as fh:  # written plain under a .gz name, then refused by evaluate
        assert len(fh.read().split()) == 12
    assert _run(["evaluate", data, tmp_path / "s.gz"], capsys)[0] == 0
    for argv in (["train", "-q", data, data], ["predict", "-o", data, model, data]):
        code, _, err = _run(argv, capsys)
        assert code == 2 and "is also an input of this command" in err
    code, _, err = _run(["predict", "--zero-based", "yes", model, data], capsys)
    assert code == 2 and "--zero-based yes contradicts" in err
    help_text = _run(["cv", "-h"], capsys)[1]
    assert "{unweighted,per_query,per_object,normalized}" in help_text and "(models:" not in help_text


def test_evaluate_scores_an_ordinal_learners_labels_for_mean_rank_loss(tmp_path, capsys):
    from fastrank.metrics import mean_rank_loss
    from fastrank.preprocessing import QueryNormalizer
    rng = np.random.default_rng(3)
    X, y, q = rng.random((12, 3)), rng.integers(0, 3, 12), np.repeat([1, 2, 3], 4)
    data = _write(tmp_path / "q.txt", y, q, X)
    assert _run(["train", "-q", "-M", "PRank", data, tmp_path / "p.frk"], capsys)[0] == 0
    out = _run(["evaluate", "-m", "mean_rank_loss", "--model", tmp_path / "p.frk", data], capsys)[1]
    Xr = load_svmlight(data)[0].toarray()
    labels = fastrank.load(tmp_path / "p.frk").predict(QueryNormalizer().fit(Xr, groups=q).transform(Xr, q))
    assert float(out.split()[1]) == pytest.approx(mean_rank_loss(y, labels, q), abs=1e-6)  # not decision values


def test_per_query_text_output_without_query_ids(tmp_path, capsys):
    rng = np.random.default_rng(3)
    data = _write_noqid(tmp_path / "noq.txt", rng.integers(0, 3, 8), rng.random((8, 2)))
    scores = tmp_path / "s.txt"
    scores.write_text("\n".join(str(v) for v in rng.random(8)) + "\n")
    out = _run(["evaluate", "--per-query", data, scores], capsys)[1].splitlines()
    assert out[0] == "qid\tdisagreement" and out[1].startswith("0\t") and out[2].startswith("mean\t")


@pytest.mark.parametrize("flags", [["--n-jobs", "0"], ["--kernel", "rbf", "--basis-vectors", "0"],
                                   ["--kernel", "poly", "--degree", "-1"], ["--param", "exclude_ties=1"],
                                   ["-M", "RankRLSCV", "--param", "scoring=foo"],
                                   ["--alpha", "auto", "--cv", "lpo", "-m", "ndcg@10"], ["--param", "verbose=-1"],
                                   ["-M", "RankRLSCV", "--param", "cv=foo"], ["-M", "RankRLSCV", "--param", "cv=1.5"],
                                   ["-M", "RankRLSCV", "--param", "cv=1"], ["-M", "RankRLSCV", "--param", "cv=true"]])
def test_parameters_fit_would_refuse_are_usage_errors(tmp_path, capsys, flags):
    rng = np.random.default_rng(3)
    data = _write(tmp_path / "q.txt", rng.integers(0, 3, 12), np.repeat([1, 2, 3], 4), rng.random((12, 3)))
    code, _, err = _run(["train", "-q", *flags, data, tmp_path / "m.frk"], capsys)
    assert code == 2 and "failed" not in err, err  # was exit 1, "fitting ... failed"


def test_model_rankrlscv_defaults_to_the_scoring_of_alpha_auto(tmp_path, capsys):
    rng = np.random.default_rng(3)
    data = _write(tmp_path / "q.txt", rng.integers(0, 3, 12), np.repeat([1, 2, 3], 4), rng.random((12, 3)))
    code, out, err = _run(["train", "-M", "RankRLSCV", data, tmp_path / "m.frk"], capsys)
    assert code == 0 and "(ndcg@10, cv=lgo)" in out + err, out + err  # was auc, against -h


def _noqid(path):
    path.write_text("2 1:1 2:0.5\n1 1:0.2 2:0.1\n0 1:0 2:0.9\n1 1:0.5 2:0.5\n0 1:0.1 2:0.6\n")
    (path.parent / (path.name + ".query")).write_text("3\n2\n")
    return path


def test_no_command_writes_over_a_query_file_or_its_data(tmp_path, capsys):
    # train / predict -o replaced the query file they read (found by name or given), cv --plot the training file
    data = _noqid(tmp_path / "data.txt")
    query = tmp_path / "data.txt.query"
    assert _run(["train", "-q", data, query], capsys)[0] == 2
    assert _run(["train", "-q", data, tmp_path / "m.frk"], capsys)[0] == 0
    assert _run(["predict", "-o", query, tmp_path / "m.frk", data], capsys)[0] == 2
    (tmp_path / "q.txt").write_text("3\n2\n")
    assert _run(["predict", "--query-file", tmp_path / "q.txt", "-o", tmp_path / "q.txt", tmp_path / "m.frk", data],
                capsys)[0] == 2
    code, _, err = _run(["cv", "-q", "--plot", data, data], capsys)
    assert code == 2 and "is also an input of this command" in err
    assert query.read_text() == "3\n2\n" and (tmp_path / "q.txt").read_text() == "3\n2\n"
    assert data.read_text().startswith("2 1:1 2:0.5\n")


@pytest.mark.parametrize("flags", [["--solver", "cg"], ["--solver", "cg", "--sparse"],
                                   ["--kernel", "rbf", "--basis-vectors", "3", "--seed", "0",
                                    "--param", "exclude_ties=true"]])
def test_train_takes_what_fit_takes(tmp_path, capsys, flags):
    # refused with "exact cross-validation needs the dense solver": the check built the CV record of a plain RankRLS
    rng = np.random.default_rng(3)
    X, y, q = rng.random((12, 3)), rng.integers(0, 3, 12), np.repeat([1, 2, 3], 4)
    data = _write(tmp_path / "q.txt", y, q, X)
    code, _, err = _run(["train", "-q", *flags, data, tmp_path / "m.frk"], capsys)
    assert code == 0, err
    from fastrank.preprocessing import QueryNormalizer

    model = fastrank.load(tmp_path / "m.frk")
    Xf, yf, qf = load_svmlight(data)  # the file's values (six decimals)
    # the oracle: the Python API on what train fits (per-query min-max features, none under --sparse)
    Xn = Xf if "--sparse" in flags else \
        QueryNormalizer().fit(Xf.toarray(), groups=qf).transform(Xf.toarray(), groups=qf)
    want = fastrank.RankRLS(**model.get_params()).fit(Xn, yf, groups=qf).predict(Xn)
    np.testing.assert_allclose(model.predict(Xn), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("flags", [["-M", "RankSVM", "--param", "C=-1"], ["-M", "SVRank", "--param", "C=inf"],
                                   ["-M", "RankRLSCV", "--param", "alphas=-1"], ["-M", "MPRankCV", "--param", "Cs=-1"],
                                   ["-M", "RankRLSCV", "--param", "solver=cg"]])
def test_bad_regularization_from_any_flag_is_a_usage_error(tmp_path, capsys, flags):
    rng = np.random.default_rng(3)
    data = _write(tmp_path / "q.txt", rng.integers(0, 3, 12), np.repeat([1, 2, 3], 4), rng.random((12, 3)))
    code, _, err = _run(["train", "-q", *flags, data, tmp_path / "m.frk"], capsys)
    assert code == 2 and "failed" not in err, err  # was exit 1, "fitting ... failed", after reading the file


def test_a_no_break_space_is_named_with_its_line(tmp_path):
    # str.strip() removed the trailing U+00A0 before the ASCII check: the parser's "could not convert string to float"
    from fastrank.datasets import load_svmlight

    data = tmp_path / "nb.txt"
    data.write_bytes(b"1 qid:1 1:2\xc2\xa0\n0 qid:1 1:1\n")
    with pytest.raises(ValueError, match=r"nb\.txt:1: a non-ASCII character outside a comment"):
        load_svmlight(data)


def test_cv_refuses_a_plot_format_before_the_cross_validation(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(3)
    data = _write(tmp_path / "q.txt", rng.integers(0, 3, 12), np.repeat([1, 2, 3], 4), rng.random((12, 3)))
    code, out, err = _run(["cv", "--plot", tmp_path / "cv.jpg2", data], capsys)
    assert code == 2 and "matplotlib cannot write 'jpg2' files" in err and out == ""  # the CV report came first


@pytest.mark.parametrize("command, flags, message", [
    ("train", ["--param", "nosuch=1"], "RankRLS has no parameter 'nosuch'"),
    ("train", ["--param", "verbose=-1"], "verbose must be an integer >= 0"),
    ("train", ["--param", "tol=abc"], "'tol' parameter of RankRLS"),
    ("train", ["--param", "n_jobs=0"], "n_jobs must be None or a non-zero integer"),
    ("train", ["-M", "RankRLSCV", "--param", "alphas=-1,2"], "alphas must be finite and > 0"),
    ("train", ["--alpha", "auto", "--alphas", "0,1"], "bad alpha grid '0,1'"),
    ("train", ["-M", "RankRLSCV", "--cv", "1"], "--cv needs at least 2 folds"),
    ("train", ["--solver", "cg", "--kernel", "rbf"], "solver='cg' solves the linear RankRLS"),
    ("train", ["--solver", "primal", "--kernel", "poly"], "solver='primal' needs kernel='linear'"),
    ("train", ["--solver", "cg", "--basis-vectors", "5"], "basis_vectors (sparse approximation) cannot be combined"),
    ("cv", ["--cv", "foo"], "bad --cv 'foo'"),
    ("cv", ["--alphas", "1,-1"], "bad alpha grid '1,-1'"),
])
def test_parameters_are_checked_before_the_training_file_is_read(tmp_path, capsys, command, flags, message):
    # a usage error at once, not after reading a large file: the file here does not exist
    files = [tmp_path / "absent.txt"] + ([tmp_path / "m.frk"] if command == "train" else [])
    code, _, err = _run([command, *flags, *files], capsys)
    assert code == 2 and message in err, err


def test_a_pair_measure_scheme_from_missing_query_ids_is_a_usage_error(tmp_path, capsys):
    # --no-qid leaves RankRLSCV's cv=None, which fit resolves to leave-pair-out: a fit failure (exit 1) after the data
    rng = np.random.default_rng(3)
    data = _write(tmp_path / "q.txt", rng.integers(0, 3, 12), np.repeat([1, 2, 3], 4), rng.random((12, 3)))
    code, _, err = _run(["train", "-M", "RankRLSCV", "--no-qid", "-m", "ndcg@10", data, tmp_path / "m.frk"], capsys)
    assert code == 2 and "-m ndcg@10 needs hold-out queries or folds" in err, err
    assert _run(["train", "-q", "-M", "RankRLSCV", "-m", "ndcg@10", data, tmp_path / "m.frk"], capsys)[0] == 0
