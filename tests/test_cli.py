"""The fastrank command line, end to end: train -> predict -> evaluate equals the Python API."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

import fastrank
from conftest import pipe_path, shared_data
from fastrank import cli
from fastrank.datasets import load_lambdarank, load_svmlight
from fastrank.metrics import ndcg, pairwise_disagreement

PYTHON_DIR = Path(fastrank.__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A small LETOR-style train/test pair (1-based indices, qid:) from the bundled sample."""
    d = load_lambdarank(sparse=True)
    root = tmp_path_factory.mktemp("letor")
    tr, te = root / "train.txt", root / "test.txt"
    k = d.groups_train < 25
    dump_svmlight_file(d.X_train[k], d.y_train[k], str(tr), query_id=d.groups_train[k], zero_based=False)
    k = d.groups_test < 8
    dump_svmlight_file(d.X_test[k], d.y_test[k], str(te), query_id=d.groups_test[k], zero_based=False)
    return tr, te


def run(argv, capsys):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _scores(text):
    return np.array([float(v) for v in text.split()])


def test_train_predict_evaluate_equals_python_api(files, tmp_path, capsys):
    tr, te = files
    model = tmp_path / "model.frk"
    code, _, _ = run(["train", "-q", "--normalize", "none", "--alpha", "10", "--kernel", "rbf", "--gamma", "0.003",
                      "--group-weighting", "normalized", tr, model], capsys)
    assert code == 0 and model.exists()
    code, out, _ = run(["predict", model, te], capsys)
    assert code == 0
    cli_scores = _scores(out)

    X, y, q = load_svmlight(tr)
    est = fastrank.RankRLS(alpha=10.0, kernel="rbf", gamma=0.003, group_weighting="normalized")
    est.fit(X.toarray(), y, groups=q)
    Xt, yt, qt = load_svmlight(te, n_features=X.shape[1])
    api_scores = est.predict(Xt.toarray())
    assert cli_scores.shape == api_scores.shape and np.array_equal(cli_scores, api_scores)

    # -o FILE, then evaluate the score file and with the model: same numbers as fastrank.metrics
    scores_file = tmp_path / "scores.txt"
    assert run(["predict", "-o", scores_file, model, te], capsys)[0] == 0
    assert np.array_equal(_scores(scores_file.read_text()), api_scores)
    expected = {"ndcg@10": ndcg(yt, api_scores, qt, k=10), "ndcg": ndcg(yt, api_scores, qt),
                "disagreement": pairwise_disagreement(yt, api_scores, qt, tied_scores="half")}
    for source in ([te, scores_file], ["--model", model, te]):
        code, out, _ = run(["evaluate", "--format", "json", *source], capsys)
        assert code == 0
        assert json.loads(out)["mean"] == pytest.approx(expected, rel=1e-12, abs=0)


def test_evaluate_per_query_table(files, tmp_path, capsys):
    tr, te = files
    Xt, yt, qt = load_svmlight(te)
    rng = np.random.default_rng(0)
    s = rng.normal(size=yt.size)
    sf = tmp_path / "s.txt"
    sf.write_text("".join(f"{v!r}\n" for v in s.tolist()))
    code, out, _ = run(["evaluate", "--per-query", "-m", "ndcg@5", "-m", "disagreement", te, sf], capsys)
    assert code == 0
    lines = out.strip().split("\n")
    assert lines[0] == "qid\tndcg@5\tdisagreement"
    body = [ln.split("\t") for ln in lines[1:-1]]
    assert [int(r[0]) for r in body] == np.unique(qt).tolist()
    for i, (qid, a, b) in enumerate(body):
        r = qt == int(qid)  # a literal per-query computation
        assert float(a) == pytest.approx(ndcg(yt[r], s[r], k=5), abs=1e-6)
        assert float(b) == pytest.approx(pairwise_disagreement(yt[r], s[r], tied_scores="half"), abs=1e-6)
    mean = lines[-1].split("\t")
    assert mean[0] == "mean"
    assert float(mean[1]) == pytest.approx(ndcg(yt, s, qt, k=5), abs=1e-6)
    assert float(mean[2]) == pytest.approx(np.mean([float(r[2]) for r in body]), abs=1e-5)


def test_alpha_auto_uses_leave_query_out(files, tmp_path, capsys):
    tr, te = files
    model = tmp_path / "auto.frk"
    code, _, err = run(["train", "--normalize", "none", "--alpha", "auto", "--alphas", "0.1,10,1000", tr, model], capsys)
    assert code == 0 and "alpha chosen by cross-validation" in err
    X, y, q = load_svmlight(tr)
    # the default CV measure of query data is NDCG@10 on the held-out queries
    ref = fastrank.RankRLSCV(alphas=[0.1, 10, 1000], cv="lgo", scoring="ndcg@10").fit(X.toarray(), y, q)
    loaded = fastrank.load(model)
    assert loaded.alpha_ == ref.alpha_ and np.array_equal(loaded.cv_results_["scores"], ref.cv_results_["scores"])
    code, out, _ = run(["predict", model, te], capsys)
    Xt, _, _ = load_svmlight(te, n_features=X.shape[1])
    assert np.array_equal(_scores(out), ref.predict(Xt.toarray()))


def test_cv_report_matches_rankrlscv(files, capsys):
    tr, _ = files
    code, out, _ = run(["cv", "--normalize", "none", "--cv", "lpo", "--alphas", "1e-2:1e2:5", tr], capsys)
    assert code == 0
    rows = [ln.split("\t") for ln in out.split("\n") if ln and not ln.startswith(("#", "alpha"))]
    X, y, q = load_svmlight(tr)
    # leave-pair-out scores pairs: the default measure is then the pairwise disagreement (minimised)
    ref = fastrank.RankRLSCV(alphas=np.logspace(-2, 2, 5), cv="lpo", scoring="disagreement").fit(X.toarray(), y, q)
    assert np.allclose([float(r[0]) for r in rows], ref.cv_results_["alphas"], rtol=1e-5)
    assert np.allclose([float(r[1]) for r in rows], ref.cv_results_["scores"], atol=1e-6)
    assert [len(r) == 3 for r in rows].index(True) == int(np.argmin(ref.cv_results_["scores"]))
    # k folds keep whole queries together
    code, out, _ = run(["cv", "--cv", "3", "--scoring", "ndcg", "--alphas", "1,10", tr], capsys)
    assert code == 0 and "3-fold" in out


def test_online_and_mprank_models(files, tmp_path, capsys):
    tr, te = files
    X, y, q = load_svmlight(tr)
    Xt, _, _ = load_svmlight(te, n_features=X.shape[1])
    m = tmp_path / "oap.frk"
    code, _, _ = run(["train", "--normalize", "none", "--model", "oapbpm", "--seed", "0", "--param", "n_estimators=5",
                      "--param", "tau=0.5", tr, m], capsys)
    assert code == 0
    ref = fastrank.OAPBPM(n_estimators=5, tau=0.5, random_state=0).fit(X.toarray(), y)
    # the ranking score (decision_function), not the few predicted labels that tie most pairs
    assert np.array_equal(_scores(run(["predict", m, te], capsys)[1]), ref.decision_function(Xt.toarray()))
    m2 = tmp_path / "mp.frk"
    code, _, err = run(["train", "--normalize", "none", "--model", "MPRank", "-c", "3", tr, m2], capsys)
    assert code == 0 and "does not use query ids" not in err  # MPRank learns inside queries too
    ref = fastrank.MPRank(C=3.0).fit(X.toarray(), y, q)
    assert np.array_equal(_scores(run(["predict", m2, te], capsys)[1]), ref.predict(Xt.toarray()))


def test_gzip_input_and_plain_svmlight_without_qid(files, tmp_path, capsys):
    tr, te = files
    gz = tmp_path / "train.txt.gz"
    with gzip.open(gz, "wb") as fh:
        fh.write(tr.read_bytes())
    plain = tmp_path / "noqid.txt"
    plain.write_text("\n".join(" ".join(t for t in ln.split() if not t.startswith("qid:"))
                               for ln in tr.read_text().splitlines()) + "\n")
    for src, name in ((tr, "a"), (gz, "b"), (plain, "c")):
        assert run(["train", "-q", "--normalize", "none", src, tmp_path / name], capsys)[0] == 0
    pa, pb, pc = (_scores(run(["predict", tmp_path / n, te], capsys)[1]) for n in "abc")
    assert np.array_equal(pa, pb)
    X, y, q = load_svmlight(plain)
    assert q is None
    Xt, _, _ = load_svmlight(te, n_features=X.shape[1])
    assert np.array_equal(pc, fastrank.RankRLS().fit(X.toarray(), y).predict(Xt.toarray()))


def test_rlscore_legacy_files(tmp_path, capsys):
    """RLScore's sparse query data (0-based, 195k features; the test file uses indices the training
    file never does): CG on CSR through the CLI equals the Python API, extra features ignored."""
    d = shared_data("rlscore_legacy")
    tr, te = d / "rank_train.light", d / "rank_test.light"
    model = tmp_path / "rls.frk"
    code, _, _ = run(["train", "-q", "--zero-based", "yes", "--alpha", "100", "--param", "max_iter=60",
                      "--param", "tol=1e-12", tr, model], capsys)
    assert code == 0
    X, y, q = load_svmlight(tr, zero_based=True)
    est = fastrank.RankRLS(alpha=100.0, max_iter=60, tol=1e-12).fit(X, y, groups=q)
    assert est.fit_mode_ == "cg"
    Xt, yt, qt = load_svmlight(te, zero_based=True)
    assert Xt.shape[1] > X.shape[1]
    api = est.predict(Xt[:, :X.shape[1]])
    code, out, _ = run(["predict", model, te], capsys)
    assert code == 0 and np.array_equal(_scores(out), api)
    code, out, _ = run(["evaluate", "--format", "json", "-m", "disagreement", "--model", model, te], capsys)
    assert json.loads(out)["mean"]["disagreement"] == pytest.approx(
        pairwise_disagreement(yt, api, qt, tied_scores="half"), rel=1e-12)


def test_train_predict_evaluate_read_pipes_as_the_files(tmp_path, capsys):
    """<(...) or a pipe on /dev/stdin: each command's output equals the regular file's (the reader's second pass
    over a pipe read nothing: "the file has no data lines")."""
    rng = np.random.default_rng(0)
    tr, te = tmp_path / "train.txt", tmp_path / "test.txt"
    for path, m in ((tr, 40), (te, 16)):
        dump_svmlight_file(rng.random((m, 4)), rng.integers(0, 3, m), str(path),
                           query_id=np.repeat(np.arange(m // 8), 8), zero_based=False)
    model, piped = tmp_path / "m.frk", tmp_path / "p.frk"
    assert run(["train", "-q", tr, model], capsys)[0] == 0
    with pipe_path(tr.read_bytes()) as name:
        assert run(["train", "-q", name, piped], capsys)[0] == 0
    code, want, _ = run(["predict", model, te], capsys)
    assert code == 0 and len(want.split()) == 16
    with pipe_path(te.read_bytes()) as name:
        assert run(["predict", piped, name], capsys) == (0, want, "")
    (tmp_path / "s.txt").write_text(want)
    code, report, _ = run(["evaluate", "--per-query", te, tmp_path / "s.txt"], capsys)
    assert code == 0 and report.startswith("qid\tndcg@10\tndcg\tdisagreement\n0\t")
    with pipe_path(te.read_bytes()) as data, pipe_path(b"# scores\n" + want.encode()) as scores:
        assert run(["evaluate", "--per-query", data, scores], capsys) == (0, report, "")


# ----------------------------------------------------------------------------------------------
# errors and exit codes
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("content,message", [
    ("1 qid:1 1:0.5\n2 qid:1 1:0.25\n0 qid:2 1:0.5 2:abc\n", r":3: value of feature 2: 'abc' is not a number"),
    ("1 qid:1 1:0.5\n# comment\n\n2 qid:1 3:1 2:1\n", r":4: feature index 2 in '2:1' is not greater"),
    ("1 qid:1 1:0.5\n2 1:0.25\n", r":2: some lines have a qid: and others do not"),
    ("1 qid:a 1:0.5\n", r":1: query id 'qid:a' is not an integer"),
    ("one qid:1 1:0.5\n", r":1: target 'one' is not a number"),
    ("1 qid:1 1:nan\n0 qid:1 1:1\n", r":1: value of feature 1: 'nan' is not finite"),
    ("1 qid:1 1:0.5 foo\n", r":1: token 'foo' is not of the form <index>:<value>"),
    ("1 qid:1 1:0.5 1:0.7\n", r":1: feature index 1 in '1:0.7' is not greater than the previous index 1"),
    ("", r"no data lines"),
], ids=["bad-value", "unsorted", "mixed-qid", "bad-qid", "bad-target", "nan", "bad-token", "duplicate", "empty"])
def test_malformed_file_message_and_exit_code(content, message, tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text(content)
    code, out, err = run(["train", bad, tmp_path / "m"], capsys)
    assert code == 1
    assert err.startswith("fastrank train: error: ")
    assert (f"{bad}{message}" if message.startswith(":") else message) in err, err
    assert not (tmp_path / "m").exists()


def test_data_and_model_errors_exit_1(files, tmp_path, capsys):
    tr, te = files
    code, _, err = run(["train", tmp_path / "missing.txt", tmp_path / "m"], capsys)
    assert code == 1 and "missing.txt: no such file" in err
    junk = tmp_path / "junk.frk"
    junk.write_bytes(b"not a model")
    code, _, err = run(["predict", junk, te], capsys)
    assert code == 1 and "not a readable fastrank model file" in err
    sf = tmp_path / "short.txt"
    sf.write_text("1\n2\n")
    code, _, err = run(["evaluate", te, sf], capsys)
    assert code == 1 and "has 2 scores but the data file has" in err
    sf.write_text("1\nx\n")
    code, _, err = run(["evaluate", te, sf], capsys)
    assert code == 1 and f"{sf}:2: score 'x' is not a number" in err
    code, _, err = run(["train", "--model", "PRank", shared_data("rlscore_legacy") / "rank_train.light",
                        tmp_path / "p"], capsys)
    assert code == 1 and "fitting PRank failed" in err  # continuous labels


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_unreadable_model_file_is_a_data_error(files, command, tmp_path, capsys):
    """A model path that open() refuses (here a directory): exit 1 naming it, no traceback."""
    te = files[1]
    argv = ["predict", tmp_path, te] if command == "predict" else ["evaluate", "--model", tmp_path, te]
    code, _, err = run(argv, capsys)
    assert code == 1 and err.startswith(f"fastrank {command}: error: ") and str(tmp_path) in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("normalize", ["auto", "none", "zscore", "query-minmax"])
@pytest.mark.parametrize("command", ["train", "cv"])
def test_file_without_features_is_a_data_error(command, normalize, tmp_path, capsys):
    """A file whose lines carry no index:value pair: exit 1 naming the file, no traceback, no model."""
    bad = tmp_path / "nofeatures.txt"
    bad.write_text("1 qid:1\n0 qid:1\n2 qid:2\n1 qid:2\n")
    out_args = [tmp_path / "m"] if command == "train" else []
    code, _, err = run([command, "--normalize", normalize, bad, *out_args], capsys)
    assert code == 1 and err.startswith(f"fastrank {command}: error: {bad}: no features"), err
    assert "Traceback" not in err and not (tmp_path / "m").exists()


def test_evaluate_reads_compressed_score_files_and_names_binary_ones(files, tmp_path, capsys):
    tr, te = files
    yt = load_svmlight(te)[1]
    s = np.random.default_rng(1).normal(size=yt.size)
    text = "".join(f"{v!r}\n" for v in s.tolist())
    plain, packed = tmp_path / "s.txt", tmp_path / "s.txt.gz"
    plain.write_text(text)
    with gzip.open(packed, "wt") as fh:
        fh.write(text)
    outs = []
    for sf in (plain, packed):
        code, out, _ = run(["evaluate", "--format", "json", te, sf], capsys)
        assert code == 0
        outs.append(json.loads(out)["mean"])
    assert outs[0] == outs[1]
    binary = tmp_path / "s.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    code, _, err = run(["evaluate", te, binary], capsys)
    assert code == 1 and err.startswith(f"fastrank evaluate: error: {binary}") and "Traceback" not in err, err


@pytest.mark.parametrize("argv,message", [
    (["train", "--model", "NoSuchRanker", "T", "M"], "unknown model 'NoSuchRanker'; choose from"),
    (["train", "--param", "no_such=1", "T", "M"], "RankRLS has no parameter 'no_such'"),
    (["train", "--param", "oops", "T", "M"], "use --param NAME=VALUE"),
    (["train", "-c", "3", "T", "M"], "RankRLS is regularized by --alpha"),
    (["train", "--model", "MPRank", "--alpha", "auto", "T", "M"], "needs --model RankRLS"),
    (["train", "--alpha", "auto", "--alphas", "1:x", "T", "M"], "bad alpha grid"),
    (["evaluate", "T"], "either a score file"),
    (["evaluate", "-m", "nope", "T", "S"], "unknown measure 'nope'"),
    (["evaluate", "-m", "disagreement@3", "T", "S"], "takes no @k"),
    (["train", "--alpha", "-1", "T", "M"], "--alpha must be a positive number"),
    (["frobnicate"], "invalid choice"),
], ids=["model", "param", "param-syntax", "C-for-RankRLS", "auto-needs-rankrls", "grid", "evaluate-source",
        "measure", "measure-k", "negative-alpha", "command"])
def test_usage_errors_exit_2(argv, message, files, tmp_path, capsys):
    tr, te = files
    argv = [str(tr) if a == "T" else str(tmp_path / "m") if a == "M" else str(tmp_path / "s") if a == "S" else a
            for a in argv]
    code, _, err = run(argv, capsys)
    assert code == 2 and message in err, err


@pytest.mark.parametrize("param,flag", [("alphas=1,10", "--alphas"), ("cv=5", "--cv"), ("scoring=map", "-m/--scoring")])
def test_alpha_auto_refuses_cv_settings_by_param(param, flag, files, tmp_path, capsys):
    """--alpha auto sets RankRLSCV's alphas, cv and scoring from their own flags: the same setting by --param
    is a usage error, not silently replaced by the flag's default."""
    code, _, err = run(["train", "--alpha", "auto", "--param", param, files[0], tmp_path / "m"], capsys)
    assert code == 2 and f"from {flag}, not from --param" in err, err
    assert not (tmp_path / "m").exists()


def test_sparse_flag(files, tmp_path, capsys):
    """--sparse keeps X as CSR for learners that take it (same model as the Python API on CSR input); with a
    normaliser or a learner without sparse input it is a usage error naming the flag to drop."""
    tr, te = files
    code, _, err = run(["train", "--sparse", "--normalize", "zscore", "--model", "MPRank", tr, tmp_path / "m"], capsys)
    assert code == 2 and "--normalize zscore makes the features dense; drop --sparse" in err, err
    code, _, err = run(["train", "--sparse", "--normalize", "none", "--model", "MPRank", tr, tmp_path / "m"], capsys)
    assert code == 2 and "MPRank does not accept sparse input; drop --sparse" in err, err
    assert not (tmp_path / "m").exists()
    assert run(["train", "-q", "--sparse", "--normalize", "none", tr, tmp_path / "m"], capsys)[0] == 0
    X, y, q = load_svmlight(tr)
    assert fastrank.load(tmp_path / "m").get_params() == fastrank.RankRLS().get_params()
    Xt = load_svmlight(te, n_features=X.shape[1])[0]
    ref = fastrank.RankRLS().fit(X, y, groups=q).predict(Xt.toarray())
    code, out, _ = run(["predict", tmp_path / "m", te], capsys)
    assert code == 0
    np.testing.assert_allclose(_scores(out), ref, rtol=1e-10, atol=1e-12)


def test_help_has_examples(capsys):
    for cmd in cli.COMMANDS:
        code, out, _ = run([cmd, "-h"], capsys)
        assert code == 0 and "examples:" in out and f"fastrank {cmd}" in out
    code, out, _ = run(["train", "-h"], capsys)
    assert "OAPBPM" in out and "RankRLS" in out  # models listed from the fastrank namespace
    assert run([], capsys)[0] == 2


def test_progress_and_quiet(files, tmp_path, capsys):
    tr, _ = files
    code, _, err = run(["train", "--progress", tr, tmp_path / "m"], capsys)
    assert code == 0 and "[fastrank] reading" in err and "[fastrank] fitting RankRLS" in err
    code, _, err = run(["train", "-q", tr, tmp_path / "m"], capsys)
    assert code == 0 and err == ""
    code, _, err = run(["train", tr, tmp_path / "m"], capsys)  # not a terminal: silent by default
    assert code == 0 and err == ""


def test_python_m_fastrank_subprocess(files, tmp_path):
    """The real entry point: exit codes and messages through `python -m fastrank`."""
    tr, te = files
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0.5\n1 qid:1 1:x\n")
    r = subprocess.run([sys.executable, "-m", "fastrank", "train", str(bad), str(tmp_path / "m")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1 and f"{bad}:2: value of feature 1: 'x' is not a number" in r.stderr
    r = subprocess.run([sys.executable, "-m", "fastrank", "train", "--bogus", str(tr), str(tmp_path / "m")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "unrecognized arguments: --bogus" in r.stderr


def test_main_dispatcher(capsys):
    from fastrank.__main__ import main

    assert main(["predict", "-h"]) == 0
    assert "fastrank predict" in capsys.readouterr().out


def test_console_script_declared():
    tomllib = pytest.importorskip("tomllib")
    root = Path(__file__).resolve().parents[1]
    meta = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert meta["scripts"]["fastrank"] == "fastrank.cli:console_main"
    assert meta["name"] != "fastrank"  # the PyPI name fastrank belongs to another project


def test_evaluate_reports_the_ir_measures(files, tmp_path, capsys):
    tr, te = files
    m = tmp_path / "lin.frk"
    assert run(["train", "--normalize", "none", "--alpha", "10", tr, m], capsys)[0] == 0
    code, out, _ = run(["evaluate", "--format", "json", "-m", "map", "-m", "mrr", "-m", "precision@5", "-m", "err@10",
                        "--model", m, te], capsys)
    assert code == 0
    import json

    got = json.loads(out)
    model = fastrank.load(m)
    X, y, q = load_svmlight(te, n_features=model.n_features_in_)
    s = model.predict(X.toarray())
    want = {"map": fastrank.metrics.mean_average_precision(y, s, q), "mrr": fastrank.metrics.mean_reciprocal_rank(y, s, q),
            "precision@5": fastrank.metrics.precision_at_k(y, s, q, k=5), "err@10": fastrank.metrics.err_at_k(y, s, q, k=10)}
    for name, value in want.items():
        assert got["mean"][name] == pytest.approx(value, rel=1e-12)


# ----------------------------------------------------------------------------------------------
# raw LETOR features, --normalize, warnings, formatting, pipes
# ----------------------------------------------------------------------------------------------
def _raw_letor(seed, n_queries, n_features=136):
    """MSLR-like raw features: term counts, count/length ratios, BM25-like scores, document lengths,
    PageRank-like values up to ~1e7, inlink counts, rescaled noisy copies at scales 1e-2..1e3, and
    constant columns; graded labels 0..4 from a latent relevance.  The layout (which feature is
    what) is the same for every seed, so a train and a test file match."""
    rng = np.random.default_rng(seed)
    lay = np.random.default_rng(12345)
    idf = lay.uniform(1, 8, size=5)
    picks = [(int(lay.integers(29)), lay.uniform(0.5, 2) * 10.0 ** int(lay.integers(-2, 4))) for _ in range(n_features)]
    rows, ys, qs = [], [], []
    for q in range(n_queries):
        m = int(rng.integers(8, 25))
        rel = rng.normal(size=m)
        qlen = rng.integers(1, 6)
        doclen = rng.lognormal(6, 1.0, size=m)
        tf = rng.poisson(np.exp(0.8 * rel + 1.0)[:, None] * rng.uniform(0.5, 2, size=(1, 5)) * qlen).astype(float)
        bm25 = tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * doclen[:, None] / doclen.mean())) * idf
        F = np.column_stack([tf, tf / doclen[:, None], bm25, bm25 * qlen, np.log1p(tf) * idf, doclen,
                             np.exp(rng.normal(8 + 0.5 * rel, 2)), rng.poisson(np.exp(2 + 0.3 * rel)),
                             rng.integers(10, 120, size=m)])
        extra = [F[:, j] * s + rng.poisson(3, size=m) for j, s in picks[:n_features - F.shape[1]]]
        F = np.column_stack([F] + extra)[:, :n_features]
        F[:, -3:] = 0.0
        F[:, -3] = 7.0
        rows.append(F)
        ys.append(np.digitize(rel + 0.3 * rng.normal(size=m), [0.0, 0.8, 1.5, 2.2]))
        qs.append(np.full(m, seed * 1000 + q + 1))
    return np.vstack(rows), np.concatenate(ys).astype(float), np.concatenate(qs)


@pytest.fixture(scope="module")
def raw_letor(tmp_path_factory):
    root = tmp_path_factory.mktemp("raw")
    out = []
    for name, seed, nq in (("train.txt", 1, 60), ("test.txt", 2, 40)):
        X, y, q = _raw_letor(seed, nq)
        dump_svmlight_file(X, y, str(root / name), query_id=q, zero_based=False)
        out += [root / name, (X, y, q)]
    return out


def _warning_lines(err):
    return [ln for ln in err.splitlines() if "warning" in ln.lower()]


def test_raw_letor_file_trains_with_defaults_close_to_the_best_tuned_rankrls(raw_letor, tmp_path, capsys):
    """Raw MSLR-style features (scales 1e-3..1e7): the default command and --alpha auto succeed with at
    most one warning line, within 0.02 NDCG@10 of the best linear RankRLS tuned on the test set itself
    (alphas 1e-3..1e6 on z-scored and on per-query min-max features: an upper bound)."""
    from sklearn.preprocessing import StandardScaler

    from fastrank.preprocessing import QueryNormalizer

    tr, (X, y, q), te, (Xt, yt, qt) = raw_letor
    alphas = np.logspace(-3, 6, 19)
    best = 0.0
    for A, At in ((StandardScaler().fit(X).transform(X), StandardScaler().fit(X).transform(Xt)),
                  (QueryNormalizer().fit_transform(X, groups=q), QueryNormalizer().fit_transform(Xt, groups=qt))):
        path = fastrank.rankrls_path(A, y, alphas, groups=q)
        best = max(best, max(ndcg(yt, path.fitted_estimator(k).predict(At), qt, k=10) for k in range(alphas.size)))
    for extra in ([], ["--alpha", "auto", "--scoring", "ndcg@10"]):
        model = tmp_path / "m.frk"
        code, _, err = run(["train", *extra, tr, model], capsys)
        assert code == 0, err
        assert len(_warning_lines(err)) <= 1, err
        code, out, _ = run(["evaluate", "--format", "json", "-m", "ndcg@10", "--model", model, te], capsys)
        assert code == 0
        got = json.loads(out)["mean"]["ndcg@10"]
        assert got >= best - 0.02, (extra, got, best)


def test_raw_features_without_normalisation_give_scaling_advice_and_one_warning(raw_letor, tmp_path, capsys):
    tr = raw_letor[0]
    code, _, err = run(["train", "--normalize", "none", "--alpha", "1e-300", tr, tmp_path / "m"], capsys)
    assert code == 1
    assert "alpha=1e-300" in err and "0.000000" not in err  # %g, not fixed six decimals
    assert "standardise" in err and "--normalize" in err    # the scaling advice, not only "centre X"
    # the default grid: every alpha is singular, as fit finds it (the k folds printed SciPy's "A singular matrix
    # detected: slice(s) [0] are singular.")
    code, _, err = run(["cv", "--normalize", "none", "--cv", "3", tr], capsys)
    assert code == 1
    assert "alpha=0.001: the linear RankRLS system X^T L X + alpha I is singular to working precision" in err
    assert "standardise" in err and "slice" not in err
    # a grid of merely ill-conditioned alphas: one warning for all its solves
    code, _, err = run(["cv", "--normalize", "none", "--cv", "3", "--alphas", "1e8,2e8", tr], capsys)
    assert code == 0, err
    lines = _warning_lines(err)
    assert len(lines) == 1 and "IllConditionedWarning" in lines[0] and "linear solves were ill-conditioned" in lines[0]
    # the Python API: the same fit emits exactly one warning, no raw SciPy LinAlgWarning
    import warnings

    X, y, q = raw_letor[1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fastrank.RankRLSCV(alphas=[1e8, 2e8], cv=np.unique(q, return_inverse=True)[1] % 3).fit(X, y, q)
    assert [w.category for w in caught] == [fastrank.IllConditionedWarning]
    assert "LinAlgWarning" not in err


@pytest.mark.parametrize("name", ["zscore", "query-minmax", "query-zscore", "log1p-zscore"])
def test_normalize_is_stored_and_applied_to_new_files(name, raw_letor, tmp_path, capsys):
    from fastrank.preprocessing import make_normalizer

    tr, (X, y, q), te, (Xt, yt, qt) = raw_letor
    model = tmp_path / "m.frk"
    assert run(["train", "-q", "--normalize", name, "--alpha", "3", tr, model], capsys)[0] == 0
    code, out, _ = run(["predict", model, te], capsys)
    assert code == 0
    # the oracle: the transformer fitted on the training rows, applied to the test rows
    Xf, _, _ = load_svmlight(tr)
    Xtf, _, _ = load_svmlight(te, n_features=Xf.shape[1])
    t = make_normalizer(name)
    if name.startswith("query-"):
        A, At = t.fit_transform(Xf.toarray(), groups=q), t.transform(Xtf.toarray(), groups=qt)
    else:
        A, At = t.fit_transform(Xf.toarray()), t.transform(Xtf.toarray())
    want = fastrank.RankRLS(alpha=3.0).fit(A, y, q).predict(At)
    np.testing.assert_allclose(_scores(out), want, rtol=1e-9, atol=1e-9)


def test_group_weighting_offers_every_weighting(files, tmp_path, capsys):
    from fastrank._problem import WEIGHTINGS

    tr, te = files
    X, y, q = load_svmlight(tr)
    Xt, _, _ = load_svmlight(te, n_features=X.shape[1])
    for w in WEIGHTINGS:
        m = tmp_path / f"{w}.frk"
        assert run(["train", "-q", "--normalize", "none", "--group-weighting", w, tr, m], capsys)[0] == 0
        want = fastrank.RankRLS(group_weighting=w).fit(X.toarray(), y, q).predict(Xt.toarray())
        assert np.array_equal(_scores(run(["predict", m, te], capsys)[1]), want)
    m = tmp_path / "rb.frk"
    assert run(["train", "-q", "--model", "RankBoost", "--n-estimators", "5", "--group-weighting", "query", tr, m],
               capsys)[0] == 0
    assert fastrank.load(m).group_weighting == "query"


def test_help_names_every_model_a_flag_applies_to(capsys):
    code, out, _ = run(["train", "-h"], capsys)
    text = " ".join(out.split())
    assert code == 0
    for param, flag in (("gamma", "--gamma"), ("C", "-c"), ("n_epochs", "--n-epochs"), ("group_weighting",
                                                                                         "--group-weighting")):
        models = sorted(n for n, c in cli._estimators().items() if param in c().get_params(deep=False))
        assert f"(models: {', '.join(models)})" in text, (flag, models)
    for w in ("per_query", "per_object", "normalized", "unweighted"):
        assert w in text


def test_cv_reports_progress_per_alpha(files, capsys):
    tr, _ = files
    code, _, err = run(["cv", "--progress", "--cv", "lpo", "--alphas", "1,10,100", tr], capsys)
    assert code == 0 and "[fastrank] RankRLSCV: 3/3 alpha" in err


def test_log_lines_go_through_tqdm_write_while_a_bar_is_drawn(monkeypatch, capsys):
    """With a tqdm bar on screen a plain print breaks it; every log line uses tqdm.write then."""
    import io
    import types

    from fastrank import _progress

    written = []

    class FakeTqdm:
        def __init__(self, *a, **k):
            pass

        def update(self, n):
            pass

        def close(self):
            pass

        @staticmethod
        def write(text, file=None):
            written.append(text)

    fake = types.ModuleType("tqdm.auto")
    fake.tqdm = FakeTqdm
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", fake)
    buf = io.StringIO()
    with _progress.progress(10, "work", verbose=1, backend="tqdm", file=buf):
        with _progress.stage("a step", verbose=1, file=buf):
            pass
        _progress.write_line("[fastrank] a note", buf)
    assert written == ["[fastrank] a step ...", "[fastrank] a step: done in 0.0 s", "[fastrank] a note"]
    _progress.write_line("after", buf)  # the bar is closed: a plain line again
    assert buf.getvalue() == "after\n" and not _progress._open_bars


def test_closed_pipe_exits_quietly(raw_letor, tmp_path):
    """`fastrank predict ... | head -1`: no BrokenPipeError traceback (Python docs, "Note on SIGPIPE")."""
    tr, _, te, _ = raw_letor
    big = tmp_path / "big.txt"
    big.write_text(te.read_text() * 12)  # > 64 KiB of scores: the writer blocks on the pipe
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    model = tmp_path / "m.frk"
    assert cli.main(["train", "-q", str(tr), str(model)]) == 0
    p = subprocess.Popen([sys.executable, "-m", "fastrank", "predict", str(model), str(big)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    p.stderr.close()
    p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_oapbpm_defaults_rank_raw_letor_files(raw_letor, tmp_path, capsys):
    """OAPBPM with defaults on raw features was worse than random (disagreement 0.6 here): PRank's
    unit threshold steps are lost next to weights on raw scales, and predicted labels tie most pairs.
    The default normalisation and the real-valued ranking score fix both."""
    tr, _, te, _ = raw_letor
    m = tmp_path / "oap.frk"
    assert run(["train", "-q", "--model", "OAPBPM", "--seed", "0", tr, m], capsys)[0] == 0
    code, out, _ = run(["evaluate", "--format", "json", "-m", "disagreement", "--model", m, te], capsys)
    assert code == 0 and json.loads(out)["mean"]["disagreement"] < 0.2


def test_model_with_foreign_svmlight_metadata_is_a_data_error(files, tmp_path, capsys):
    tr, te = files
    X, y, q = load_svmlight(tr)
    model = tmp_path / "m.frk"
    fastrank.save(fastrank.RankRLS().fit(X.toarray(), y, groups=q), model, metadata={"svmlight": "not an object"})
    code, _, err = run(["predict", model, te], capsys)
    assert code == 1 and "its metadata 'svmlight' is not the object fastrank train writes" in err, err
