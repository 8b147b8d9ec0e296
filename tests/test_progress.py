"""fastrank._progress: silent at verbose=0, log lines or a tqdm bar otherwise."""

import io

import pytest

from fastrank._progress import progress, resolve_verbose, stage


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_silent_by_default_and_at_zero():
    buf = io.StringIO()
    for v in (0, False, None):
        with progress(10, "x", verbose=v, file=buf) as bar:
            for _ in range(10):
                bar.update()
    assert list(progress.iterate(range(4), verbose=0, file=buf)) == [0, 1, 2, 3]
    with stage("step", verbose=0, file=buf):
        pass
    assert buf.getvalue() == ""


def test_log_lines_when_not_a_terminal():
    buf = io.StringIO()
    with progress(4, "RankRLSCV", verbose=1, unit="alphas", file=buf, min_interval=0.0) as bar:
        for _ in range(4):
            bar.update()
            bar.note("best so far 0.7")
    lines = buf.getvalue().strip().split("\n")
    assert lines[0].startswith("[fastrank] RankRLSCV: 1/4 alphas (25%)") and "left" in lines[0]
    assert "(best so far 0.7)" in lines[-1] and lines[-1].endswith("done") and "4/4 alphas (100%)" in lines[-1]
    buf = io.StringIO()
    with progress(1000, "rate-limited", verbose=1, file=buf, min_interval=3600) as bar:
        for _ in range(1000):
            bar.update()
    assert buf.getvalue().count("\n") == 1  # only the final line


def test_no_final_line_after_an_exception():
    buf = io.StringIO()
    with pytest.raises(RuntimeError):
        with progress(3, "x", verbose=1, file=buf, min_interval=3600):
            raise RuntimeError("boom")
    assert "done" not in buf.getvalue()


def test_tqdm_bar_on_a_terminal():
    pytest.importorskip("tqdm")
    buf = _Tty()
    with progress(5, "lpo", verbose=1, file=buf) as bar:
        assert type(bar).__name__ == "_Bar"
        bar.update(5)
    assert "lpo" in buf.getvalue()
    buf = io.StringIO()
    with progress(5, "lpo", verbose=1, file=buf, backend="log") as bar:
        assert type(bar).__name__ == "_LogLines"


def test_stage_and_verbose_resolution():
    buf = io.StringIO()
    with stage("fitting", verbose=1, file=buf) as st:
        pass
    assert buf.getvalue().startswith("[fastrank] fitting ...\n[fastrank] fitting: done in ")
    assert st.elapsed >= 0
    assert resolve_verbose("auto", io.StringIO()) == 0 and resolve_verbose("auto", _Tty()) == 1
    assert resolve_verbose(True) == 1 and resolve_verbose(3) == 3
    with pytest.raises(ValueError, match="verbose"):
        resolve_verbose(-1)
    with pytest.raises(ValueError, match="verbose"):
        resolve_verbose("loud")


def test_long_functions_report_progress_only_when_asked(capsys):
    import numpy as np

    import fastrank
    from fastrank import model_selection as ms

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf")
    quiet = ms.leave_pair_out(est, X, y)
    assert capsys.readouterr().err == ""
    loud = ms.leave_pair_out(est, X, y, verbose=1)
    err = capsys.readouterr().err
    assert "kernel matrix" in err and "leave-pair-out predictions of 780 pairs" in err and "done in" in err
    np.testing.assert_array_equal(quiet, loud)
    ms.permutation_test_lpo(est, X, y, n_permutations=3, random_state=0, verbose=1)
    assert "3 permutations" in capsys.readouterr().err
    fastrank.RankRLSCV(alphas=[0.1, 1.0], verbose=1).fit(X, y)
    assert "RankRLSCV" in capsys.readouterr().err
    cg = fastrank.RankRLS(solver="cg", verbose=1, tol=1e-10).fit(X, y)
    err = capsys.readouterr().err
    assert "conjugate gradient" in err and f"{cg.n_iter_}" in err
    fastrank.RankRLS(kernel="rbf", verbose=1).fit(X, y)
    assert "dual solve" in capsys.readouterr().err


def test_online_passes_report_progress(capsys):
    import numpy as np

    import fastrank

    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 3))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    fastrank.OAPBPM(n_estimators=3, n_epochs=3, random_state=0).fit(X, y)
    assert capsys.readouterr().err == ""
    fastrank.OAPBPM(n_estimators=3, n_epochs=3, random_state=0, verbose=1).fit(X, y)
    assert "OAPBPM passes" in capsys.readouterr().err
    fastrank.WidrowHoff(n_epochs=2, verbose=1).fit(X, y)
    assert "WidrowHoff passes" in capsys.readouterr().err
