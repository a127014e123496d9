"""Planted bugs that verification must catch: every mutant of ``benchmarks/mutants.py`` is
planted (monkeypatched, never edited into a source file), its model analyzed with
``analyze_file(..., Config(verify=True))``, and the mutant scored.

Usage::

    python benchmarks/mutations.py                   # every mutant
    python benchmarks/mutations.py --fast            # one per class (what CI runs)
    python benchmarks/mutations.py --only exp-free --only bn-no-eps
    python benchmarks/mutations.py --values-only     # without the count checks: values alone
    python benchmarks/mutations.py --fixed-params    # without redrawing constant parameters
    python benchmarks/mutations.py --json > m.json

A mutant is CAUGHT when the analysis of its model reports it at run time, that is, the
entry's verification is not ``verified`` (its values, or its counts: ``verification.counts``
is ``mismatch``) or the analysis fails, or, offline only, when its FLOP counts differ from
the reference: the same model analyzed without the mutant (the figures the tests pin with
hand formulas). Each model's reference run must itself be ``verified`` with its counts
``checked``; a mutant that changed nothing on its model is listed as not planted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from mutant_models import write_models  # noqa: E402
from mutants import CLASSES, MUTANTS, Mutant, planted  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)  # torch.export's pytree chatter
COUNT_KEYS = ("macs", "tensor_flops", "vector_flops", "transcendentals")


def analyze(path: Path):
    """The one entry of a model file, analyzed and verified."""
    from solar_lsp.pipeline.analyze import Config, analyze_file
    report = analyze_file(str(path), Config(verify=True))
    if report.error or len(report.entries) != 1:
        raise RuntimeError(f"{path.name}: {report.error or len(report.entries)} entries")
    return report.entries[0]


def reference(path: Path) -> dict:
    """The unmutated model: its counts, and whether it verifies (values and counts)."""
    e = analyze(path)
    v = e.verification
    ok = e.status == "ok" and v["status"] == "verified" and v.get("counts", {"status": "checked"})["status"] == "checked"
    return {"ok": ok, "totals": {k: e.totals.get(k) for k in COUNT_KEYS}, "status": v["status"],
            "detail": v["detail"], "counts": v.get("counts", {}).get("status"),
            "unsupported": len(e.unsupported)}


def score(m: Mutant, path: Path, ref: dict) -> dict:
    """Plant ``m``, analyze its model, and say what (if anything) caught it."""
    t = time.perf_counter()
    with planted(m) as p:
        e = analyze(path)
    v = e.verification if e.status == "ok" else {"status": "error", "detail": e.error}
    by = []
    if e.status != "ok" or len(e.unsupported) > ref["unsupported"]:
        by.append("analysis")
    elif v["status"] != "verified" and not v["detail"].startswith("counts:"):
        by.append("values")
    counts = v.get("counts") or {}
    if counts.get("status") == "mismatch":
        by.append("counts")
    diff = {k: (ref["totals"][k], e.totals.get(k)) for k in COUNT_KEYS
            if e.status == "ok" and e.totals.get(k) != ref["totals"][k]}
    if diff:
        by.append("reference")
    detail = v["detail"] if by and by[0] != "reference" else (
        "; ".join(f"{k} {a:,} -> {b:,}" for k, (a, b) in diff.items()) if diff else v["detail"])
    return {"name": m.name, "class": m.cls, "model": m.model, "what": m.what, "planted": p.changed,
            "caught_by": by, "runtime": bool(set(by) & {"analysis", "values", "counts"}),
            "caught": bool(by), "status": v["status"], "counts": counts.get("status"),
            "detail": detail, "seconds": round(time.perf_counter() - t, 2)}


def without_counts():
    """Patch the verifiers so that counts are neither checked nor attached (values only)."""
    from solar_lsp.verify import check_jax, check_torch
    saved = [(mod, mod.with_counts) for mod in (check_torch, check_jax) if hasattr(mod, "with_counts")]
    for mod, _ in saved:
        mod.with_counts = lambda v, cc: v
    return lambda: [setattr(mod, "with_counts", f) for mod, f in saved]


def fixed_parameters():
    """Patch the torch golden run to keep the model's own parameters (no redrawing)."""
    from solar_lsp.verify import check_torch
    if not hasattr(check_torch, "randomize_parameters"):
        return lambda: None
    saved = check_torch.randomize_parameters
    check_torch.randomize_parameters = lambda model, seed: 0
    return lambda: setattr(check_torch, "randomize_parameters", saved)


def run(mutants: list[Mutant], values_only: bool = False, log=print, fixed_params: bool = False) -> dict:
    """Score every mutant; returns the per-mutant rows, the references and a summary."""
    undos = ([without_counts()] if values_only else []) + ([fixed_parameters()] if fixed_params else [])
    try:
        with tempfile.TemporaryDirectory() as tmp:
            paths = write_models(Path(tmp))
            refs = {}
            for name in sorted({m.model for m in mutants}):
                refs[name] = reference(paths[name])
                if not refs[name]["ok"] and not values_only:
                    log(f"reference {name}: NOT VERIFIED ({refs[name]['status']}, counts "
                        f"{refs[name]['counts']}): {refs[name]['detail']}")
            rows = []
            for m in mutants:
                r = score(m, paths[m.model], refs[m.model])
                r["reference_ok"] = refs[m.model]["ok"] or values_only
                rows.append(r)
                log(_row(r))
    finally:
        for undo in undos:
            undo()
    return {"values_only": values_only, "fixed_params": fixed_params, "rows": rows, "references": refs, "summary": summary(rows)}


def _row(r: dict) -> str:
    how = ",".join(r["caught_by"]) or "SURVIVED"
    if not r["planted"]:
        how = "NOT PLANTED"
    return f"  {r['class']:9s} {r['name']:26s} {how:24s} {r['seconds']:5.1f}s  {r['detail'][:110]}"


def summary(rows: list[dict]) -> dict:
    """Per class: planted, caught, caught at run time, survivors (by name)."""
    out = {}
    for cls in CLASSES:
        rs = [r for r in rows if r["class"] == cls and r["planted"] and r["reference_ok"]]
        if not rs and not any(r["class"] == cls for r in rows):
            continue
        out[cls] = {"planted": len(rs), "caught": sum(r["caught"] for r in rs),
                    "runtime": sum(r["runtime"] for r in rs),
                    "survivors": [r["name"] for r in rs if not r["caught"]],
                    "runtime_survivors": [r["name"] for r in rs if not r["runtime"]]}
    return out


def print_summary(res: dict) -> None:
    s = res["summary"]
    rows = res["rows"]
    print()
    print(f"{'class':10s} {'planted':>7s} {'caught':>7s} {'at run time':>12s}  survivors (run time)")
    for cls, d in s.items():
        print(f"{cls:10s} {d['planted']:7d} {d['caught']:7d} {d['runtime']:12d}  "
              f"{', '.join(d['runtime_survivors']) or '-'}")
    n = sum(d["planted"] for d in s.values())
    c = sum(d["caught"] for d in s.values())
    rt = sum(d["runtime"] for d in s.values())
    print(f"{'total':10s} {n:7d} {c:7d} {rt:12d}")
    print(f"score: {c}/{n} caught ({100 * c / max(n, 1):.0f}%); at run time (values or counts): "
          f"{rt}/{n} ({100 * rt / max(n, 1):.0f}%)")
    left = [r["name"] for r in rows if not r["caught"] and r["planted"] and r["reference_ok"]]
    print(f"survivors (caught by nothing): {', '.join(left) or 'none'}")
    bad = [r["name"] for r in rows if not r["planted"] or not r["reference_ok"]]
    if bad:
        print(f"not scored (not planted, or the reference does not verify): {', '.join(bad)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fast", action="store_true", help="one mutant per class")
    ap.add_argument("--only", action="append", default=[], help="a mutant by name (repeatable)")
    ap.add_argument("--class", dest="cls", action="append", default=[], help="a class (repeatable)")
    ap.add_argument("--values-only", action="store_true", help="without the count checks")
    ap.add_argument("--fixed-params", action="store_true",
                    help="keep the models' own parameters in the golden run (no redrawing)")
    ap.add_argument("--json", action="store_true", help="all rows as JSON on stdout")
    args = ap.parse_args(argv)
    ms = [m for m in MUTANTS if (not args.fast or m.fast) and (not args.only or m.name in args.only)
          and (not args.cls or m.cls in args.cls)]
    t = time.perf_counter()
    res = run(ms, values_only=args.values_only, fixed_params=args.fixed_params, log=(lambda s: print(s, file=sys.stderr)) if args.json else print)
    res["seconds"] = round(time.perf_counter() - t, 1)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print_summary(res)
        print(f"({res['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
