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
from conftest import shared_data
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
    code, _, _ = run(["train", "-q", "--alpha", "10", "--kernel", "rbf", "--gamma", "0.003",
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
    code, _, err = run(["train", "--alpha", "auto", "--alphas", "0.1,10,1000", tr, model], capsys)
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
    code, out, _ = run(["cv", "--cv", "lpo", "--alphas", "1e-2:1e2:5", tr], capsys)
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
    code, _, _ = run(["train", "--model", "oapbpm", "--seed", "0", "--param", "n_estimators=5",
                      "--param", "tau=0.5", tr, m], capsys)
    assert code == 0
    ref = fastrank.OAPBPM(n_estimators=5, tau=0.5, random_state=0).fit(X.toarray(), y)
    assert np.array_equal(_scores(run(["predict", m, te], capsys)[1]), ref.predict(Xt.toarray()))
    m2 = tmp_path / "mp.frk"
    code, _, err = run(["train", "--model", "MPRank", "-c", "3", tr, m2], capsys)
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
        assert run(["train", "-q", src, tmp_path / name], capsys)[0] == 0
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
    assert run(["train", "--alpha", "10", tr, m], capsys)[0] == 0
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
