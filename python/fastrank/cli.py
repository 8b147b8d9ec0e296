"""The ``fastrank`` command-line program: train, predict, evaluate and cross-validate on
svmlight / LETOR files (``<target> [qid:<id>] <index>:<value> ... [# comment]``, ``.gz`` too).

Exit codes: 0 success, 1 data / model / fitting error (message on stderr, naming file:line for
malformed data), 2 usage error (bad options), 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
import warnings
from types import SimpleNamespace

import numpy as np

from ._cv import RankRLSCV, _check_scoring
from ._memory import densified
from ._persist import _writable_path, load, save
from ._problem import WEIGHTINGS
from ._progress import progress, resolve_verbose, stage, write_line
from ._registry import ESTIMATORS
from ._svmlight import _QUERY_SUFFIXES, _open, read_scores, read_svmlight
from ._solvers import choose_solver, select_basis
from ._validation import check_alpha, check_alphas, check_n_jobs, check_real, group_index
from ._version import __version__
from .metrics import _accepts, get_measure, measure_names
from .plotting import CVCurveDisplay
from .preprocessing import NORMALIZERS, make_normalizer

__all__ = ["main"]

PROG = "fastrank"


class UsageError(Exception):
    """Bad options: exit code 2."""


class DataError(Exception):
    """Bad data or model: exit code 1."""


# -- measures: the names of the measure table of fastrank.metrics (get_measure parses "ndcg@10") --
DEFAULT_MEASURES = ("ndcg@10", "ndcg", "disagreement")  # evaluate, data with query ids and labels >= 0
DEFAULT_MEASURES_NO_QID = ("disagreement",)

# --normalize auto on dense files; chosen by test NDCG@10 on real and raw LETOR-style data
# (README, "Preprocessing"; benchmarks/real_data_results.py)
NORMALIZE_DEFAULT = "query-minmax"


def _measure_arg(text):
    """argparse type of --measure/--scoring: the name itself, validated against the table."""
    try:
        get_measure(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("unknown ranking measure", "unknown measure")) from None
    return text.strip().lower()


def evaluate_scores(y, scores, qid, measures, *, each_query=True, verbose=0):
    """Averaged and per-query values: (list of (label, mean), query ids, dict label -> per-query values).

    The average is the measure's own (mean over the queries where it is defined, as
    ``fastrank.metrics`` computes it); per-query values are the measure on each query alone
    (NaN where undefined, e.g. a query without two different labels)."""
    gi = group_index(qid, y.size)
    ids, rows = gi.labels, gi.rows()
    averaged, per_query = [], {}
    for text in measures:
        measure = get_measure(text)  # a name --measure checked, or a default
        label = measure.name
        with _errors_as(DataError, ValueError, f"cannot compute {label}: "):
            averaged.append((label, float(measure(y, scores, qid))))
        if not each_query:
            continue
        # a query alone keeps the file's grade scale: ERR's g_max is the largest grade of all rows, as in the average
        kw = {"max_grade": float(y.max())} if _accepts(measure.func, "max_grade") else {}
        vals = np.full(ids.size, np.nan)
        for i, r in enumerate(progress.iterate(rows, desc=f"{label} per query", unit="queries", verbose=verbose)):
            with contextlib.suppress(ValueError):  # undefined for this query (no pair to compare, no relevant row)
                vals[i] = measure(y[r], scores[r], **kw)
        per_query[label] = vals
    return averaged, ids, per_query


# -- helpers -----------------------------------------------------------------------------------
_FIT_ERRORS = (ValueError, TypeError, ArithmeticError, MemoryError)


@contextlib.contextmanager
def _errors_as(error, types, prefix="", message=None):
    try:
        yield
    except types as exc:
        raise error(f"{prefix}{exc}" if message is None else message) from None


def _estimators():
    return dict(ESTIMATORS)


def _write_stdout(text):
    """``text`` on the standard output, flushed; a failed write (a full disk) is a DataError.  A reader that went away
    (BrokenPipeError) is main's: the command ends quietly."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise DataError(f"cannot write the standard output: {exc.strerror or exc}") from None


_WORDS = {"none": None, "null": None, "true": True, "yes": True, "false": False, "no": False}


def _parse_value(text):
    """A --param value: None, a bool, an int, a float, a comma list of values, or the text itself."""
    t = text.strip()
    if t.lower() in _WORDS:
        return _WORDS[t.lower()]
    for conv in (int, float):
        with contextlib.suppress(ValueError):
            return conv(t)
    if "," in t:
        return [_parse_value(p) for p in t.split(",") if p.strip()]
    return t


_CV_FLAGS = {"alphas": "--alphas", "cv": "--cv", "scoring": "-m/--scoring"}  # RankRLSCV's parameters under --alpha auto
ALPHA_GRID = "1e-3:1e3:13"  # --alphas when not given


def parse_grid(text):
    """'1e-3:1e3:13' (log-spaced) or '0.1,1,10' -> array of alphas."""
    usage = f"bad alpha grid {text!r}: use LOW:HIGH:N (N log-spaced values, e.g. 1e-3:1e3:13) or a comma list of " \
            "positive numbers"
    with _errors_as(UsageError, (ValueError, MemoryError), message=usage):
        if ":" in text:  # float() and int() ignore surrounding blanks
            lo, hi, n = text.split(":")
            return check_alphas(np.logspace(math.log10(float(lo)), math.log10(float(hi)), int(n)))
        return check_alphas([float(v) for v in text.split(",") if v.strip()])


def _cv_arg(text, groups):
    if text is None:  # as RankRLSCV(cv=None): leave-query-out from two queries on, else leave-pair-out
        return "lgo" if groups is not None and np.unique(groups).size > 1 else "lpo"
    t = text.lower()
    if t == "lgo" and groups is None:
        raise UsageError("--cv lgo (leave-query-out) needs qid: in the file and no --no-qid")
    if t in ("lpo", "lgo"):
        return t
    with _errors_as(UsageError, ValueError, message=f"bad --cv {text!r}: use lpo, lgo or a number of folds"):
        k = int(t)
    if k < 2:
        raise UsageError("--cv needs at least 2 folds")
    return k


def _read(path, args, *, n_features=None, zero_based=None, extra="error"):
    zb = zero_based if zero_based is not None else {"auto": "auto", "yes": True, "no": False}[args.zero_based]
    with stage(f"reading {path}", verbose=args.progress), _errors_as(DataError, (FileNotFoundError, ValueError)):
        out = read_svmlight(path, n_features=n_features, zero_based=zb, extra_features=extra,
                            query_file=args.query_file or "auto")
    if out[3].query_file is not None:
        _say(args, f"{path}: query groups from {out[3].query_file}")
    return out


def _model_input(X, groups, est, state, how="auto", *, fit=False):
    """(X as ``est`` takes it, the JSON state kept in the model file) for a --normalize state ``{"name": ...}`` or None.

    "auto" is the measured default on dense files (README, "Preprocessing") and none on sparse files (under 10%
    non-zero), where normalising would densify X and lose the sparse solvers.  Unnormalised X stays CSR for estimators
    that take sparse input when ``how`` is "sparse", or "auto" and the file is sparse; else ("dense") it is densified.
    ``fit``: learn the statistics of zscore and log1p-zscore from X (training), else apply the stored training ones
    (the per-query normalisers learn nothing)."""
    sparse = X.nnz < 0.1 * X.shape[0] * X.shape[1]
    precomputed = getattr(est, "kernel", None) == "precomputed"  # X holds kernel values, not features
    if state is not None and state["name"] == "auto":
        # without query ids a per-query normaliser would scale each predict file by its own min and max (a file of
        # one row scores 0): the training statistics (zscore) instead; under --sparse, none
        state = None if sparse or precomputed or how == "sparse" else \
            {"name": NORMALIZE_DEFAULT if groups is not None else "zscore"}
    name = "none" if state is None else state["name"]
    if precomputed and name != "none":
        raise UsageError(f"--normalize {name} would change the values of a precomputed kernel; use --normalize none")
    tags = getattr(est, "__sklearn_tags__", None)  # scikit-learn's; a registered learner may lack them
    accepts_sparse = bool(tags and tags().input_tags.sparse)
    if how == "sparse" and name != "none":
        raise UsageError(f"--normalize {name} makes the features dense; drop --sparse or use --normalize none")
    if how == "sparse" and not accepts_sparse:
        raise UsageError(f"{type(est).__name__} does not accept sparse input; drop --sparse")
    if name == "none" and accepts_sparse and (how == "sparse" or (how == "auto" and sparse)):
        return X, None
    with _errors_as(DataError, MemoryError):
        Xd = densified(X)
    if name == "none":
        return Xd, None
    tr = make_normalizer(name)
    with _errors_as(DataError, ValueError, f"cannot normalise the features (--normalize {name}): "):  # overflow
        if name.startswith("query-"):
            return tr.fit(Xd).transform(Xd, groups=groups), state
        if fit:  # fit_transform runs before the statistics are read
            return tr.fit_transform(Xd), {**state, "mean": tr.mean_.tolist(), "scale": tr.scale_.tolist()}
        tr.fit(Xd[:1])  # shapes and fitted attributes; the statistics are the training data's
        tr.mean_, tr.scale_ = np.asarray(state["mean"]), np.asarray(state["scale"])
        return tr.transform(Xd), state


def _read_training(args, how):
    """(estimator, its training input, y, groups, info, normaliser state or None) of the training file: groups
    None with --no-qid; the input as --normalize and ``how`` (see _model_input) make it."""
    spec = _estimator_params(args)
    X, y, qid, info = _read(args.train_file, args)
    if X.shape[1] == 0:  # a learner needs at least one feature; say so before any fit or normaliser does
        raise DataError(f"{args.train_file}: no features (no line has an index:value pair); nothing to learn from")
    q = f", {np.unique(qid).size} queries" if qid is not None else ", no qid: or query file"
    _say(args, f"{args.train_file}: {X.shape[0]} rows, {X.shape[1]} features{q}")
    groups = None if args.no_qid else qid
    est = _build_estimator(args, spec, groups, y)
    _check_parameters(est, groups, *X.shape)
    Xm, state = _model_input(X, groups, est, {"name": args.normalize}, how, fit=True)
    if state is not None:
        _say(args, f"features normalised: {state['name']}")
    if state is not None and groups is None and state["name"].startswith("query-"):
        _say(args, f"warning: --normalize {state['name']} without query ids normalises every file as one query, by "
                   "its own statistics: a row's score depends on the other rows of its file (a file of one row scores "
                   "0); use zscore or log1p-zscore, which keep the training statistics", level=0)
    return est, Xm, y, groups, info, state


def _say(args, text, level=1):  # level 0: warnings, silenced by --quiet only, as the library's warnings print
    if args.verbose_level >= level:
        write_line(f"{PROG} {args.command}: {text}" if level == 0 else f"[fastrank] {text}")


def _stored_normalization_ok(state, n_features):
    """Whether a model file's --normalize state is one fastrank train writes: None, or a normaliser's name with, for
    zscore and log1p-zscore, the training means and scales of the n_features (a hand-made entry would reach the
    normaliser as a KeyError or a numpy broadcasting error)."""
    name = state.get("name") if isinstance(state, dict) else None
    if name not in ("zscore", "log1p-zscore"):
        return state is None or name in NORMALIZERS
    try:
        stats = np.array([state.get("mean"), state.get("scale")], dtype=np.float64)
    except (TypeError, ValueError):  # ragged lists, text
        return False
    return stats.shape == (2, n_features) and bool(np.isfinite(stats).all())


def _model_scores(model_file, data_file, args, *, labels=False):
    """(y, qid, scores, predicted labels or None) of a data file read as the model's training file was (its feature
    count and index base, its normalisation); ``labels``: also ``predict``'s values, in the same pass."""
    with _errors_as(DataError, (OSError, ValueError)):  # OSError: a path open() refuses (a directory, no permission)
        model, meta = load(model_file, return_metadata=True)
    for est in (model, getattr(model, "best_estimator_", None)):  # --n-jobs: the threads of kernel predictions
        if args.n_jobs is not None and est is not None and "n_jobs" in est.get_params(deep=False):
            est.set_params(n_jobs=args.n_jobs)
    meta = meta.get("svmlight", {})
    if not isinstance(meta, dict):  # metadata of a model saved from Python, not by fastrank train
        raise DataError(f"{model_file}: its metadata 'svmlight' is not the object fastrank train writes")
    n = meta.get("n_features", getattr(model, "n_features_in_", None))
    if meta.get("zero_based") not in (None, True, False):
        raise DataError(f"{model_file}: its metadata 'svmlight' is not the object fastrank train writes (its "
                        "'zero_based' entry)")
    if args.zero_based != "auto" and meta.get("zero_based") not in (None, args.zero_based == "yes"):
        raise UsageError(f"--zero-based {args.zero_based} contradicts {model_file}, trained on "
                         f"{'0' if meta['zero_based'] else '1'}-based feature indices (data files are read as the "
                         "training file was); drop --zero-based")
    X, y, qid, info = _read(data_file, args, n_features=n, zero_based=meta.get("zero_based"), extra="ignore")
    if n is not None and info.n_features > n:
        _say(args, f"{data_file}: feature indices beyond the model's {n} features are ignored")
    if meta.get("zero_based") is None and args.zero_based == "auto" and not info.zero_based and \
            n is not None and info.n_features < n:
        # a model saved from Python records no index base: a 0-based file without feature 0 and a 1-based file
        # without the model's last feature look alike
        _say(args, f"warning: {model_file} records no index base (a model saved from Python) and {data_file} uses "
                   f"neither index 0 nor index {n}: it is read as 1-based; give --zero-based yes if the model was "
                   "trained on 0-based indices (every column shifts by one otherwise), --zero-based no if on 1-based",
             level=0)
    norm = meta.get("normalize")
    if not _stored_normalization_ok(norm, X.shape[1]):
        raise DataError(f"{model_file}: its metadata 'svmlight' is not the object fastrank train writes (its "
                        "'normalize' entry)")
    per_query = meta.get("has_qid", True)  # trained with query groups: the training rows were normalised per query
    if norm is not None and per_query and qid is None and norm["name"].startswith("query-"):
        _say(args, f"warning: the model normalises features per query ({norm['name']}) but {data_file} has no qid "
                   "and no query file (--query-file): all rows are normalised as one query", level=0)
    Xm = _model_input(X, qid if per_query else None, model, norm)[0]
    # ranking scores: decision_function for the ordinal classifiers (PRank, OAPBPM, WidrowHoff), whose predict gives
    # one of a few labels and so ties most pairs; predict otherwise
    score = getattr(model, "decision_function", model.predict)
    m, chunk, out, out_labels = Xm.shape[0], 20000, [], []
    with _errors_as(DataError, (ValueError, TypeError), "prediction failed: "), \
            progress(total=m, desc="predicting", unit="rows", verbose=args.progress if m > chunk else 0) as bar:
        for i in range(0, m, chunk):
            out.append(np.asarray(score(Xm[i:i + chunk]), dtype=np.float64))
            if labels:  # a measure of predicted labels (mean_rank_loss): the ordinal learners' predict
                out_labels.append(np.asarray(model.predict(Xm[i:i + chunk]), dtype=np.float64))
            bar.update(min(chunk, m - i))
    s = np.concatenate(out)
    if s.ndim != 1:
        raise DataError(f"the model predicts {s.shape[1]} outputs per row; the command-line tool handles one")
    return y, qid, s, np.concatenate(out_labels) if labels else None


# -- commands ----------------------------------------------------------------------------------
def _check_parameters(est, groups, n_rows, n_features):
    """What fit checks of ``est``'s parameters given the data's shape, before it reads the data: a bad value is a
    usage error (exit 2) whichever flag or --param gave it (the checks that need no data: ``_estimator_params``)."""
    params = est.get_params(deep=False)
    with _errors_as(UsageError, (TypeError, ValueError)):
        if callable(getattr(est, "_kernel_spec", None)) and params.get("kernel") != "precomputed":
            est._kernel_spec(n_features)
        if params.get("basis_vectors") is not None:
            select_basis(n_rows, params["basis_vectors"], params.get("random_state"))
        if callable(getattr(est, "_exclude_ties", None)):
            est._exclude_ties()
        searched = getattr(type(est), "_searched", None)
        if searched is not None:  # a search: what exact cross-validation needs of its model (a dense solver, ...)
            names = set(searched._get_param_names())
            model = searched(**{k: v for k, v in params.items() if k in names})
            model.set_params(**{"C" if "Cs" in params else "alpha": 1.0})._cv_spec()
        if isinstance(est, RankRLSCV):
            est._check_cv()
            scoring = _check_scoring(est.scoring)
            cv = _cv_arg(None, groups) if est.cv is None else est.cv  # None: as RankRLSCV.fit resolves it
            if cv == "lpo" and getattr(scoring, "name", None) not in ("auc", "disagreement"):
                raise ValueError(f"-m {est.scoring} needs hold-out queries or folds (--cv lgo or K); --cv lpo scores "
                                 "pairs: auc or disagreement")


def _default_scoring(groups, cv, y):
    """No --scoring: NDCG@10 for query data scored on hold-out queries (non-negative grades), else disagreement."""
    return "ndcg@10" if groups is not None and cv != "lpo" and np.all(y >= 0) else "disagreement"


def _estimator_params(args):
    """(class, its label, the parameters its flags and --param give, whether --cv gave cv): every check that needs no
    data, made before the training file is read."""
    classes = _estimators()
    cls = {k.lower(): v for k, v in classes.items()}.get(args.model.lower())
    if cls is None:
        raise UsageError(f"unknown model {args.model!r}; choose from {', '.join(sorted(classes))}")
    label = cls.__name__
    if args.alpha == "auto":
        if label != "RankRLS":
            raise UsageError("--alpha auto selects RankRLS's alpha by cross-validation; it needs --model RankRLS")
        cls, label = RankRLSCV, "--alpha auto (RankRLSCV)"
    names = set(cls().get_params(deep=False))
    params, flag_of = {}, {}
    for flags, pname, _, _ in _MODEL_OPTIONS:
        v = getattr(args, pname, None)
        if v is not None and not (pname == "alpha" and v == "auto"):
            params[pname], flag_of[pname] = v, "/".join(flags)
    if args.n_jobs is not None and "n_jobs" in names:
        params["n_jobs"], flag_of["n_jobs"] = args.n_jobs, "--n-jobs"
    elif args.n_jobs is not None:
        _say(args, f"warning: {label} has no threads to set; --n-jobs is ignored", level=0)
    given = {} if args.alpha == "auto" else {k: getattr(args, k) for k in _CV_FLAGS if getattr(args, k) is not None}
    for k, value in given.items():  # e.g. --model RankRLSCV --cv 5: set, never silently unused
        if k not in names:
            raise UsageError(f"{_CV_FLAGS[k]} sets the cross-validation of fastrank cv, train --alpha auto and --model "
                             f"RankRLSCV; {label} has no parameter {k!r}")
        flag_of[k] = _CV_FLAGS[k]
        params[k] = parse_grid(value) if k == "alphas" else value
    for item in args.param or ():
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"bad --param {item!r}: use --param NAME=VALUE")
        if name in params:  # else the later setting would silently win
            raise UsageError(f"{flag_of.get(name, f'--param {name}=...')} and --param {name}=... both set {label}'s "
                             f"{name}; give one")
        params[name] = _parse_value(value)
    for pname in sorted(set(params) - names):  # the first unknown one, the same on every run
        other, flag = {"C": ("alpha", "--alpha (larger alpha = more regularization)"),
                       "alpha": ("C", "-c/--C")}.get(pname, (None, ""))
        hint = f"; {cls.__name__} is regularized by {flag}" if other in names else ""
        raise UsageError(f"{label} has no parameter {pname!r}{hint} (its parameters: {', '.join(sorted(names))})")
    clash = sorted(_CV_FLAGS.keys() & params) if args.alpha == "auto" else ()
    if clash:
        raise UsageError(f"--alpha auto takes {clash[0]} from {_CV_FLAGS[clash[0]]}, not from --param")
    if args.alpha == "auto" and args.alphas is not None:
        parse_grid(args.alphas)
    if args.cv is not None and args.cv.lower() not in ("lpo", "lgo"):  # a number of folds, whatever the groups
        _cv_arg(args.cv, None)
    with _errors_as(UsageError, (TypeError, ValueError)):  # --cv's text becomes a scheme once the groups are known
        cls(**{k: v for k, v in params.items() if k != "cv" or k not in given})._validate_params()
        if "n_jobs" in params:
            check_n_jobs(params["n_jobs"])
        if "verbose" in params:  # not in _parameter_constraints: fit checks it where it reports progress
            resolve_verbose(params["verbose"])
        for name in ("alpha", "C"):  # every learner's regularization: finite and > 0
            if params.get(name) is not None:
                check_alpha(params[name], name)
        for name in ("alphas", "Cs"):  # the searches' grids
            if params.get(name) is not None:
                check_alphas(params[name], name)
        if params.get("solver") in ("cg", "primal"):  # the feature-space solvers, whatever the data
            linear = params.get("kernel", cls().get_params().get("kernel")) == "linear"
            choose_solver(params["solver"], SimpleNamespace(linear=linear), SimpleNamespace(sparse=False),
                          basis_vectors=params.get("basis_vectors"))
    return cls, label, params, "cv" in given


def _build_estimator(args, spec, groups, y):
    """The estimator of ``_estimator_params``'s ``spec``, completed by what depends on the training data: the cv
    scheme and the default scoring."""
    cls, _, params, cv_flag = spec
    names, params = set(cls().get_params(deep=False)), dict(params)
    if cv_flag:  # --model RankRLSCV --cv TEXT
        params["cv"] = _cv_arg(params["cv"], groups)
    if args.alpha == "auto":  # RankRLSCV's alphas, cv and scoring, from their own flags only
        cv = _cv_arg(args.cv, groups)
        params.update(alphas=parse_grid(args.alphas or ALPHA_GRID), cv=cv, scoring=args.scoring or
                      _default_scoring(groups, cv, y))
    elif cls is RankRLSCV and "scoring" not in params:  # --model RankRLSCV: the same default as --alpha auto
        params["scoring"] = _default_scoring(groups, params.get("cv"), y)
    if "verbose" in names and "verbose" not in params:  # estimators that report progress themselves
        params["verbose"] = args.progress
    with _errors_as(UsageError, (TypeError, ValueError)):
        est = cls(**params)
        est._validate_params()  # a bad value is a usage error (exit 2) whether given by its flag or --param
    return est


def cmd_train(args):
    _refuse_overwriting(args.model_file, *_inputs_of(args.train_file, args))
    with _errors_as(DataError, (OSError, ValueError)):  # before the fit: a directory, a pipe or device, no folder
        _writable_path(args.model_file)
    est, Xm, y, groups, info, norm_state = _read_training(args, "sparse" if args.sparse else "auto")
    name = type(est).__name__
    fit_kw = {"groups": groups} if groups is not None and _accepts(est.fit, "groups") else {}
    if groups is not None and not fit_kw:
        _say(args, f"warning: {name} does not use query ids; it learns from all rows together (use RankRLS for "
                   "query-wise ranking)", level=0)
    with stage(f"fitting {name} on {Xm.shape[0]} rows", verbose=args.progress) as st, \
            _errors_as(DataError, _FIT_ERRORS, f"fitting {name} failed: "):
        est.fit(Xm, y, **fit_kw)
    if name == "RankRLSCV" and args.verbose_level >= 0:
        cv = est.cv_results_["cv"]  # the scheme run: --model RankRLSCV may leave cv=None or set it by --param
        cv_desc = f"{est.cv} folds of {'whole queries' if 'groups' in fit_kw else 'rows'}" if cv == "int" else cv
        write_line(f"alpha chosen by cross-validation ({est.cv_results_['scoring']}, cv={cv_desc}): "
                   f"{est.alpha_:.6g} (score {est.best_score_:.6g}){_grid_end(est)}")
    meta = {"svmlight": {"zero_based": info.zero_based, "n_features": int(Xm.shape[1]), "has_qid": groups is not None,
                         "train_file": os.path.basename(args.train_file), "rows": int(Xm.shape[0]),
                         "normalize": norm_state}}
    with _errors_as(DataError, OSError, f"cannot write {args.model_file}: "), \
            _errors_as(DataError, (TypeError, ValueError), "cannot save the model: "):
        save(est, args.model_file, dtype="float32" if args.float32 else None, metadata=meta)
    _say(args, f"{name} fitted in {st.elapsed:.3g} s; model written to {args.model_file} "
               f"({os.path.getsize(args.model_file) / 1024:.1f} KiB)")
    return 0


def _inputs_of(data_file, args):
    """The files reading ``data_file`` may read: itself, --query-file and the query-size files found by its name."""
    return (data_file, args.query_file, *(data_file + suffix for suffix in _QUERY_SUFFIXES))


def _refuse_overwriting(output, *inputs):
    """A UsageError when ``output`` names one of the ``inputs`` (None: absent) the command would replace."""
    for path in inputs:
        if output not in (None, "-") and path is not None and os.path.exists(output) and os.path.exists(path) and \
                os.path.samefile(output, path):
            raise UsageError(f"{output} is also an input of this command; write to another file")


def cmd_predict(args):
    _refuse_overwriting(args.output, args.model_file, *_inputs_of(args.test_file, args))
    s = _model_scores(args.model_file, args.test_file, args)[2]
    text = "".join(f"{v:.17g}\n" for v in s.tolist())
    if args.output in (None, "-"):
        _write_stdout(text)
        return 0
    with _errors_as(DataError, OSError, f"cannot write {args.output}: "), _open(args.output, "wt") as fh:
        fh.write(text)  # compressed as its name says: evaluate reads .gz and .bz2 score files
    _say(args, f"{s.size} scores written to {args.output}")
    return 0


def cmd_evaluate(args):
    if (args.scores is None) == (args.model is None):
        raise UsageError("evaluate needs either a score file (positional SCORES) or --model MODEL_FILE, not both")
    on_labels = [k for k in args.measure or () if get_measure(k).name == "mean_rank_loss"]  # none by default
    if args.model is not None:
        y, qid, scores, label_pred = _model_scores(args.model, args.data_file, args, labels=bool(on_labels))
    else:
        X, y, qid, _ = _read(args.data_file, args)
        with _errors_as(DataError, ValueError):
            scores = read_scores(args.scores)
        if scores.size != y.size:
            raise DataError(f"{args.scores}: has {scores.size} scores but the data file has {y.size} rows (one score "
                            "per row)")
    if qid is None:
        _say(args, f"{args.data_file} has no qid: and no query file: every row is ranked as one query")
    graded = qid is not None and np.all(y >= 0)  # NDCG needs non-negative grades (not the -1/+1 labels of svm_light)
    measures = args.measure or list(DEFAULT_MEASURES if graded else DEFAULT_MEASURES_NO_QID)
    averaged, ids, per_query = evaluate_scores(y, scores, qid, measures, each_query=args.per_query,
                                               verbose=args.progress)
    if on_labels and args.model is not None:  # labels, not the ordinal learners' ranking scores
        by_labels, _, per_label = evaluate_scores(y, label_pred, qid, on_labels, each_query=args.per_query,
                                                  verbose=args.progress)
        averaged = [next((kv for kv in by_labels if kv[0] == k), (k, v)) for k, v in averaged]
        per_query.update(per_label)  # both empty without --per-query
    labels, out = [k for k, _ in averaged], []
    if args.format == "json":
        doc = {"mean": dict(averaged)}
        if args.per_query:
            doc["per_query"] = {str(q): {k: (None if np.isnan(v[i]) else float(v[i])) for k, v in per_query.items()}
                                for i, q in enumerate(ids.tolist())}
        out.append(json.dumps(doc, indent=1) + "\n")
    elif args.per_query:  # without qid the file is the one query, with id 0
        out.append("qid\t" + "\t".join(labels) + "\n")
        for i, q in enumerate(ids.tolist()):
            out.append(f"{q}\t" + "\t".join(f"{per_query[k][i]:.6f}" for k in labels) + "\n")  # NaN: "nan"
        out.append("mean\t" + "\t".join(f"{v:.6f}" for _, v in averaged) + "\n")
    else:
        out.append("".join(f"{k}\t{v:.6f}\n" for k, v in averaged))
    _write_stdout("".join(out))
    return 0


def _grid_end(est):
    """A note when the chosen alpha is an end of its grid: a better one may lie beyond it."""
    a = est.cv_results_["alphas"]
    if a.size < 2 or est.alpha_ not in (a.min(), a.max()):
        return ""
    return f"; the grid's {'largest' if est.alpha_ == a.max() else 'smallest'} alpha: a wider --alphas may score better"


def cmd_cv(args):
    if args.plot:  # checked before any work: the plot comes last
        _refuse_overwriting(args.plot, *_inputs_of(args.train_file, args))
        with _errors_as(DataError, ImportError, message="--plot needs matplotlib (pip install matplotlib)"):
            from matplotlib.figure import Figure  # no pyplot: no GUI backend needed
        kind, kinds = os.path.splitext(args.plot)[1][1:].lower() or "png", Figure().canvas.get_supported_filetypes()
        if kind not in kinds:
            raise UsageError(f"--plot {args.plot}: matplotlib cannot write {kind!r} files; use one of "
                             f"{', '.join(sorted(kinds))}")
    # RankRLSCV, as train --alpha auto builds it (the parser's defaults); CSR kept where RankRLSCV takes it
    est, Xd, y, groups, _, norm_state = _read_training(args, "auto")
    with stage(f"exact cross-validation over {est.alphas.size} alphas", verbose=args.progress), \
            _errors_as(DataError, _FIT_ERRORS, "cross-validation failed: "):
        est.fit(Xd, y, groups)
    res = est.cv_results_
    kept = " (queries kept together)" if groups is not None else ""
    label = {"lpo": "leave-pair-out", "lgo": "leave-query-out"}.get(est.cv, f"{est.cv}-fold{kept}")
    out = [f"# exact {label} cross-validation of RankRLS (kernel={est.kernel}, "
           f"features: {norm_state['name'] if norm_state else 'none'}), scoring={res['scoring']}\n", "alpha\tscore\n"]
    for a, s in zip(res["alphas"].tolist(), res["scores"].tolist()):
        mark = "\t<- best" if a == est.alpha_ else ""
        out.append(f"{a:.6g}\t{s:.6f}{mark}\n")
    out.append(f"# best alpha {est.alpha_:.6g}, score {est.best_score_:.6f}{_grid_end(est)}\n")
    _write_stdout("".join(out))
    if args.plot:
        fig = Figure(figsize=(6, 4))
        CVCurveDisplay.from_estimator(est, ax=fig.subplots())
        fig.tight_layout()
        with _errors_as(DataError, (OSError, ValueError), f"cannot write {args.plot}: "):
            # the format named: without an extension matplotlib would write to PLOT.png instead
            fig.savefig(args.plot, dpi=100, format=kind)
        _say(args, f"CV curve written to {args.plot}")
    return 0


# -- argument parsing --------------------------------------------------------------------------
_EPILOG_TRAIN = """\
examples:
  fastrank train train.txt model.frk                          # linear RankRLS, alpha=1, per-query pairs
  fastrank train --alpha 10 --kernel rbf --gamma 0.003 train.txt model.frk
  fastrank train --alpha auto --alphas 1e-2:1e4:31 train.txt model.frk   # alpha by leave-query-out CV
  fastrank train --model OAPBPM --param n_estimators=50 --param tau=0.5 --seed 0 train.txt model.frk
  fastrank train --model MPRank -c 3 train.txt model.frk
models: {models}
the model file is a fastrank model archive (fastrank.load(path) in Python; not a pickle)
"""
_EPILOG_PREDICT = """\
examples:
  fastrank predict model.frk test.txt > scores.txt
  fastrank predict -o scores.txt model.frk test.txt.gz
one score per input line (higher = ranked higher); feature indices the model was not trained on are ignored
"""
_EPILOG_EVAL = """\
examples:
  fastrank evaluate test.txt scores.txt         # NDCG@10, NDCG, disagreement (no qid or labels < 0: disagreement)
  fastrank evaluate --model model.frk -m ndcg@5 -m ndcg@10 --per-query test.txt
  fastrank evaluate --format json test.txt scores.txt
measures: {measures}
averages are means over queries where the measure is defined (queries with a pair of different labels,
or a relevant document for NDCG)
"""
_EPILOG_CV = """\
examples:
  fastrank cv train.txt                                 # leave-query-out over 13 alphas 1e-3..1e3
  fastrank cv --cv lpo --kernel rbf --gamma 0.01 --alphas 1e-2:1e4:31 train.txt
  fastrank cv --cv 5 -m map@10 --plot cv.png train.txt
every CV value is exact (the same as retraining without the held-out rows), computed from one
eigendecomposition for all alphas
"""


def _add_common(p):
    g = p.add_argument_group("input and output")
    g.add_argument("--zero-based", choices=("auto", "yes", "no"), default="auto",
                   help="feature index base of the data file: auto (0-based if index 0 occurs; default), yes, no; "
                        "predict and evaluate --model read the model's (a different one is refused; give a model saved "
                        "from Python, which records none, its training file's)")
    g.add_argument("--query-file", default=None, metavar="FILE",
                   help="query sizes (one per line) for a data file without qid:; default: DATA_FILE.query or "
                        "DATA_FILE.group if it exists (LightGBM / XGBoost)")
    g.add_argument("--n-jobs", type=_n_jobs_arg, default=None, metavar="N",
                   help="threads (default: all cores; -1 all cores)")
    g.add_argument("-v", "--verbose", action="count", default=0, help="more messages on stderr (repeatable)")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress or messages on stderr")
    g.add_argument("--progress", dest="progress_flag", action=argparse.BooleanOptionalAction, default=None,
                   help="show progress even when stderr is not a terminal, or never (default: shown on a terminal)")


# (option strings, estimator parameter = argparse dest, offered by cv too, add_argument keywords) of the
# hyper-parameter flags; each one's help ends with the models that have the parameter
_MODEL_OPTIONS = (
    (("--alpha",), "alpha", False, dict(
        type=lambda t: t if t == "auto" else _positive(t, "--alpha"),
        help="regularization (RankRLS's lambda; default 1 on the normalised features); 'auto' selects it by "
             "exact cross-validation (RankRLS only)")),
    (("-c", "--C"), "C", False, dict(type=lambda t: _positive(t, "-c/--C"),
                                      help="trade-off C (larger = less regularization)")),
    (("--kernel",), "kernel", True, dict(choices=("linear", "rbf", "gaussian", "poly", "polynomial"),
                                          help="kernel (default linear)")),
    (("--gamma",), "gamma", True, dict(type=lambda t: _positive(t, "--gamma"),
                                        help="rbf/poly kernel scale (default 1/n_features)")),
    (("--degree",), "degree", True, dict(type=float, help="poly kernel degree")),
    (("--coef0",), "coef0", True, dict(type=float, help="poly kernel offset")),
    (("--solver",), "solver", False, dict(help="solver; RankRLS: auto, dual, primal, cg")),
    (("--basis-vectors",), "basis_vectors", False, dict(
        type=int, metavar="R", help="subset-of-regressors model on R random training rows (kernel models)")),
    (("--seed",), "random_state", False, dict(type=int, metavar="SEED", help="random_state of the estimator")),
    (("--n-estimators",), "n_estimators", False, dict(type=int, help="ensemble size / boosting rounds")),
    (("--n-epochs",), "n_epochs", False, dict(type=int, help="passes over the data")),
    (("--group-weighting",), "group_weighting", True, dict(
        choices=WEIGHTINGS + ("pairs", "query"),
        help="weight of a query's pairs; RankRLS: unweighted (every pair 1, default), per_query (1/its number "
             "of pairs), per_object (1/(size - 1)), normalized (1/size); RankBoost: pairs (default), query "
             "(every query the same mass)")),
)


def _add_model_params(p, *, cv_only=False):
    g = p.add_argument_group("model and hyper-parameters")
    if not cv_only:
        g.add_argument("-M", "--model", default="RankRLS", metavar="NAME",
                       help="estimator name (default RankRLS; see the list below)")
    for flags, param, in_cv, kw in _MODEL_OPTIONS:
        if cv_only and in_cv:  # cv cross-validates RankRLS only: its values and no list of models
            rankrls = {"choices": WEIGHTINGS, "help": kw["help"].split("; RankBoost")[0]} \
                if param == "group_weighting" else {}
            g.add_argument(*flags, dest=param, default=None, **{**kw, **rankrls})
        elif not cv_only:
            models = ", ".join(n for n, c in sorted(_estimators().items()) if param in c().get_params(deep=False))
            g.add_argument(*flags, dest=param, default=None, **{**kw, "help": f"{kw['help']} (models: {models})"})
    if not cv_only:
        g.add_argument("--param", action="append", metavar="NAME=VALUE",
                       help="any other estimator parameter (repeatable), e.g. --param tol=1e-8")
    g.add_argument("--no-qid", action="store_true", help="ignore qid: (rank all rows together)")
    g.add_argument("--normalize", choices=("auto",) + NORMALIZERS, default="auto",
                   help=f"feature normalisation, stored in the model and applied again by predict/evaluate: "
                        f"zscore (StandardScaler), query-minmax (LETOR QueryLevelNorm), query-zscore (per-query "
                        f"z-score), log1p-zscore (log(1+x) then z-score) or none; auto (default): "
                        f"{NORMALIZE_DEFAULT} for dense files with qid, zscore without, none for sparse ones (under "
                        f"10%% non-zero) and under --sparse")
    c = p.add_argument_group("cross-validation (cv; train --alpha auto or --model RankRLSCV)")
    c.add_argument("--alphas", default=None, metavar="GRID",
                   help=f"LOW:HIGH:N log-spaced (default {ALPHA_GRID}) or a comma list")
    c.add_argument("--cv", default=None, metavar="{lpo,lgo,K}",
                   help="lpo (leave-pair-out), lgo (leave-query-out) or K folds of whole queries "
                        "(default: lgo with two or more queries, else lpo)")
    c.add_argument("-m", "--scoring", type=_measure_arg, default=None, metavar="MEASURE",
                   help="CV measure, any name of the measure table (see 'fastrank evaluate -h'; e.g. ndcg@10, map, "
                        "err@5, auc); default ndcg@10 with qid and held-out queries, else disagreement; "
                        "lpo takes auc or disagreement")


def _positive(text, flag):
    with _errors_as(argparse.ArgumentTypeError, ValueError, message=f"{flag} must be a positive number, got {text!r}"):
        return check_real(float(text), flag, "a positive number", lambda v: v > 0)


def _n_jobs_arg(text):
    """argparse type of --n-jobs: an integer check_n_jobs accepts (0 is refused for every model, threads or not)."""
    with _errors_as(argparse.ArgumentTypeError, ValueError,
                    message=f"--n-jobs must be a non-zero integer (-1: every core), got {text!r}"):
        value = int(text)
        check_n_jobs(value)
        return value


def build_parser():
    measures = ", ".join(f"{k}{'@k' if get_measure(k).cutoff else ''}" for k in measure_names())
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Learning to rank on svmlight/LETOR files (<target> [qid:<id>] <index>:<value> ...): "
                    "train, predict, evaluate, cross-validate.",
        epilog="examples:\n  fastrank train --alpha auto train.txt model.frk\n"
               "  fastrank predict model.frk test.txt > scores.txt\n"
               "  fastrank evaluate test.txt scores.txt\n  fastrank cv --kernel rbf train.txt\n"
               "run 'fastrank COMMAND -h' for the options of a command; 'python -m fastrank' runs a demo.\n"
               "exit codes: 0 ok, 1 data or model error, 2 usage error",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"fastrank {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name, summary, epilog, *files):
        p = sub.add_parser(name, help=summary, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
        for dest in files:
            p.add_argument(dest, metavar=dest.upper())
        return p

    p = command("train", "fit a model on a training file and write a model file",
                _EPILOG_TRAIN.format(models=", ".join(sorted(_estimators()))), "train_file", "model_file")
    _add_model_params(p)
    p.add_argument("--sparse", action="store_true",
                   help="keep the data sparse (RankRLS: conjugate gradient / basis vectors); default: sparse only "
                        "when under 10%% of the entries are non-zero")
    p.add_argument("--float32", action="store_true", help="store the model's arrays in single precision (half size)")
    p = command("predict", "write one score per line for a data file", _EPILOG_PREDICT, "model_file", "test_file")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="score file (default: standard output; gzip or bzip2 for a .gz or .bz2 name)")
    p = command("evaluate", "ranking measures per query and averaged", _EPILOG_EVAL.format(measures=measures),
                "data_file")
    p.add_argument("scores", nargs="?", default=None, metavar="SCORES",
                   help="score file, one per line (as written by fastrank predict)")
    p.add_argument("--model", default=None, metavar="MODEL_FILE", help="score DATA_FILE with this model instead")
    p.add_argument("-m", "--measure", action="append", type=_measure_arg, metavar="MEASURE",
                   help=f"measure (repeatable; default {' '.join(DEFAULT_MEASURES)} with qid and labels >= 0, "
                        f"else {' '.join(DEFAULT_MEASURES_NO_QID)})")
    p.add_argument("--per-query", action="store_true", help="one line per query, then the means")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    p = command("cv", "exact cross-validation report of RankRLS over an alpha grid", _EPILOG_CV, "train_file")
    _add_model_params(p, cv_only=True)
    p.set_defaults(model="RankRLS", alpha="auto", param=None)
    p.add_argument("--plot", default=None, metavar="PNG", help="also draw score vs alpha (needs matplotlib)")
    for p in sub.choices.values():
        _add_common(p)
    return parser


_HANDLERS = {"train": cmd_train, "predict": cmd_predict, "evaluate": cmd_evaluate, "cv": cmd_cv}
COMMANDS = tuple(_HANDLERS)


def main(argv=None):
    """Run the command line (``fastrank ...``).

    Parameters
    ----------
    argv : list of str or None, default=None
        The arguments after the program name; None reads ``sys.argv[1:]``.

    Returns
    -------
    code : int
        The exit code: 0 ok, 1 data or model error, 2 usage error.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)  # None: sys.argv[1:]
    except SystemExit as exc:  # argparse: 0 after -h/--version, 2 on bad usage
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    args.verbose_level = -1 if args.quiet else args.verbose
    if args.quiet or args.progress_flag is False:
        args.progress = 0
    elif args.progress_flag or sys.stderr.isatty():
        args.progress = max(1, args.verbose)
    else:  # not a terminal: log lines with -v only
        args.progress = min(1, args.verbose)
    cmd = args.command
    try:
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")  # each distinct warning once, never an exception
            try:
                code = _HANDLERS[cmd](args)
            finally:  # one line per warning, no source location; nothing under --quiet
                for w in caught if args.verbose_level >= 0 else ():
                    write_line(f"{PROG} {cmd}: warning: {w.message} [{w.category.__name__}]")
        _say(args, f"{cmd}: {time.perf_counter() - t0:.3g} s")
        return code
    except BrokenPipeError:
        # the reader of stdout went away (fastrank evaluate ... | head): exit quietly, as the Python
        # docs recommend (signal module, "Note on SIGPIPE"), without a second error at interpreter exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except (UsageError, DataError) as exc:
        print(f"{PROG} {cmd}: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        print(f"{PROG} {cmd}: interrupted", file=sys.stderr)
        return 130


def console_main():  # pragma: no cover - the console-script entry point
    sys.exit(main())


if __name__ == "__main__":  # python -m fastrank.cli, as the fastrank command
    console_main()
