"""Run the benchmarks: ``python -m benchmarks [--quick] [--only NAME] [--json FILE]``.

Every workload first checks that every library computes the same value
(gradient, Jacobian, Hessian ...) as a reference (hand-written NumPy where
there is one); a row that disagrees is reported and not timed. Then each row
is timed (median of repeated samples after warm-up, spread beside it) and
ratios are printed from this same run: each row over the baselines (plain
NumPy forward, hand-written NumPy backward), gradient over the library's own
forward, and funcgrad over each peer. The goals of issues 7 and 3 are
decided at the end of each table.

All libraries are pinned to one thread. On machines where OPENBLAS_CORETYPE
is set (see the note printed when it is), run with
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks`` to let
NumPy's OpenBLAS pick its native kernel.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import math
import os
import sys
import time
import textwrap
import traceback
import warnings
from typing import Any, Sequence

import numpy as np

from . import peers, threads
from .timing import measure_many
from .workloads import NAMES, Context, Table, build

UNITS = {"us": 1e6, "ms": 1e3, "s": 1.0}


# ---------------------------------------------------------------------------
# agreement

def to_leaves(tree: Any) -> list[np.ndarray]:
    """Flatten a result (lists, tuples, dicts, NumPy / torch / JAX / funcgrad arrays) to NumPy leaves."""
    if isinstance(tree, (list, tuple)):
        out: list[np.ndarray] = []
        for t in tree:
            out.extend(to_leaves(t))
        return out
    if isinstance(tree, dict):
        return to_leaves([tree[k] for k in sorted(tree)])
    if hasattr(tree, "detach") and hasattr(tree, "numpy"):  # torch.Tensor, funcgrad.tensor.Tensor
        tree = tree.detach().numpy()
    return [np.asarray(tree)]


def disagreement(got: Any, want: Any) -> float:
    """Largest absolute difference over all leaves, relative to the reference's largest magnitude."""
    a, b = to_leaves(got), to_leaves(want)
    if len(a) != len(b):
        return math.inf
    worst = 0.0
    for x, y in zip(a, b):
        if x.size != y.size:
            return math.inf
        x = x.reshape(y.shape).astype(np.result_type(y.dtype, np.float64))
        scale = max(float(np.max(np.abs(y), initial=0.0)), 1e-30)
        if not np.all(np.isfinite(x)):
            return math.inf
        worst = max(worst, float(np.max(np.abs(x - y), initial=0.0)) / scale)
    return worst


# ---------------------------------------------------------------------------
# running one table

def run_table(table: Table, ctx: Context, log=print) -> dict[str, Any]:
    """Check, time and print one table; return its results as plain data."""
    log(f"\n== {table.title}")
    if table.run is not None:
        rows = table.run(ctx)
        result = {"name": table.name, "title": table.title, "unit": table.unit, "rows": rows}
        values = {n: r["value"] for n, r in rows.items() if r.get("value") is not None}
        values.update({k: v for r in rows.values() for k, v in r.get("derived", {}).items()})
    else:
        result = _run_timed(table, ctx, log)
        values = {n: r["median"] for n, r in result["rows"].items() if "median" in r}
    best = {n: r["best"] for n, r in result["rows"].items() if "best" in r}
    result["targets"] = [t.evaluate(values, best) for t in table.targets]
    result["notes"] = list(table.notes)
    _print_table(result, table, log)
    return result


def _run_timed(table: Table, ctx: Context, log) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    timed = {}
    for e in table.entries:
        row: dict[str, Any] = {"group": e.group, "checked": e.check is not None}
        rows[e.name] = row
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = e.fn()
            for w in caught:  # e.g. funcgrad's vmap falling back to a loop: worth knowing beside the number
                if not e.name.startswith("funcgrad") or issubclass(w.category, DeprecationWarning):
                    continue
                text = f"{e.name} warned: {w.category.__name__}: {str(w.message).splitlines()[0][:160]}"
                if text not in table.notes:
                    table.notes.append(text)
                    log(f"  ({text})")
            if e.check is not None:
                want = e.expect if e.expect is not None else table.reference
                err = disagreement(e.check(out), want)
                row["error"] = err
                if not err <= table.rtol:
                    row["status"] = f"DISAGREES (rel. error {err:.2e} > {table.rtol:.0e}); not timed"
                    continue
            del out
            timed[e.name] = _guard(e.fn, row)
        except Exception as exc:  # a peer that cannot run this workload: say so, go on
            _failed(row, exc)
        if e.own_forward:
            row["own_forward"] = e.own_forward
    gc.collect()
    gc.freeze()  # what the checks compiled or cached (JAX, torch): keep per-sample collections cheap
    try:
        measured = measure_many(timed, ctx.budget)
    finally:
        gc.unfreeze()
    for name, both in measured.items():
        row = rows[name]
        if "status" in row:  # failed while being timed
            continue
        per = next(e.per for e in table.entries if e.name == name)
        stats = both[ctx.clock].scaled(per)
        row.update(stats.as_dict())
        row["spread"] = stats.spread
        other = "wall" if ctx.clock == "cpu" else "cpu"
        row[other] = both[other].scaled(per).as_dict()
    # ratios from this run
    for name, row in rows.items():
        if "median" not in row:
            continue
        ratios = {}
        for b in table.baselines:
            if "median" in rows.get(b, {}):
                ratios[f"x {b}"] = row["median"] / rows[b]["median"]
        own = row.get("own_forward")
        if own and "median" in rows.get(own, {}):
            ratios["grad/own fwd"] = row["median"] / rows[own]["median"]
        ours = _funcgrad_row(rows, row["group"])
        if ours and not name.startswith("funcgrad") and not name.startswith("numpy"):
            ratios["funcgrad/this"] = rows[ours]["median"] / row["median"]
        row["ratios"] = ratios
    return {"name": table.name, "title": table.title, "unit": table.unit, "rows": rows}


def _failed(row: dict[str, Any], exc: BaseException) -> None:
    text = str(exc).splitlines()[0][:120] if str(exc) else ""
    row["status"] = f"failed: {type(exc).__name__}: {text}"
    if os.environ.get("BENCH_TRACEBACK"):
        traceback.print_exc()


def _guard(fn, row: dict[str, Any]):
    """fn, but an exception while timing marks the row failed instead of ending the run."""
    def call():
        if "status" in row:
            return None
        try:
            return fn()
        except Exception as exc:
            _failed(row, exc)
            return None
    return call


def _funcgrad_row(rows: dict[str, dict[str, Any]], group: str) -> str | None:
    for name, row in rows.items():
        if name.startswith("funcgrad ") and row.get("group") == group and "median" in row:
            return name
    return None


# ---------------------------------------------------------------------------
# printing

def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def table_lines(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and cells of one result table (shared by the console and Markdown)."""
    unit = result["unit"]
    rows = result["rows"]
    if unit in UNITS:
        cols: list[str] = []
        for row in rows.values():
            for k in row.get("ratios", {}):
                if k not in cols:
                    cols.append(k)
        header = ["", f"median ({'µs' if unit == 'us' else unit})", "IQR", "min"] + cols
        cells = []
        for name, row in rows.items():
            if "median" not in row:
                cells.append([name, row.get("status", "?"), "", ""] + [""] * len(cols))
                continue
            r = row["ratios"]
            cells.append([name, _fmt(row["median"] * UNITS[unit]), f"{100 * row['spread']:.0f}%",
                          _fmt(row["best"] * UNITS[unit])]
                         + [_fmt(r[c]) if c in r else "" for c in cols])
        return header, cells
    cols = []
    for row in rows.values():
        for k in row.get("columns", {}):
            if k not in cols:
                cols.append(k)
    header = ["", unit] + cols
    cells = []
    for name, row in rows.items():
        v = row.get("value")
        c = row.get("columns", {})
        cells.append([name, _fmt(v) if isinstance(v, (int, float)) else str(row.get("status", ""))]
                     + [(_fmt(c[k]) if isinstance(c.get(k), (int, float)) else str(c.get(k, ""))) for k in cols])
    return header, cells


def _print_table(result: dict[str, Any], table: Table, log) -> None:
    header, cells = table_lines(result)
    full = [c for c in cells if c[1] and not str(c[1]).startswith(("failed", "DISAGREES"))]
    widths = [max(len(str(r[i])) for r in [header] + full) for i in range(len(header))]
    for line in [header] + cells:
        if line is not header and line not in full:
            log(f"  {str(line[0]).ljust(widths[0])}  {line[1]}")
            continue
        log("  " + "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
    for t in result["targets"]:
        log("  target " + _target_text(t))


def _target_text(t: dict[str, Any]) -> str:
    if "ratio" not in t:
        return f"{t['label']}: {t['status']} ({t['why']})"
    on_min = f"; ratio of fastest samples {t['ratio_of_min']:.2f}" if "ratio_of_min" in t else ""
    return (f"{t['label']}: {t['ratio']:.2f} (vs {t['against']}; limit {t['limit']:g}{on_min}) "
            f"-> {t['status'].upper()}")


# ---------------------------------------------------------------------------
# Markdown and plots

def write_markdown(path: str, report: dict[str, Any]) -> None:
    env = report["environment"]
    lines = [
        "## Results",
        "",
        f"- command: `{report['command']}`",
        f"- date: {report['date']}; wall time of the run: {report['wall_s']:.0f} s; mode: {report['mode']}",
        f"- machine: {env['machine'].get('cpu', '?')}, {env['machine'].get('cpus')} cores, "
        f"{env['machine'].get('memory_gib', '?')} GiB, {env['machine'].get('platform')}",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in env["versions"].items()),
        f"- funcgrad source: git {env.get('source', '?')}",
        "- BLAS: " + "; ".join(", ".join(f"{k}={v}" for k, v in p.items()) for p in env["machine"]["blas"]),
        f"- OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE in the environment: {env['machine']['openblas_env'] or 'unset'}",
        (f"- threads: every library pinned to one thread ({env['threads']}; torch.set_num_threads(1); "
         f"XLA_FLAGS={env['machine']['thread_env'].get('XLA_FLAGS')})" if report.get("threads", "one") == "one"
         else f"- threads: --threads {report['threads']} ({env['threads']})"),
        f"- load average (1/5/15 min) at start {env['load_start']}, at end {env['load_end']}",
        "",
        f"Each time is the median of repeated samples after warm-up ({report['clock']} time: "
        + ("the process's CPU time, which leaves out waiting for a core on this shared machine; "
           "wall-clock medians are in the JSON" if report['clock'] == 'cpu' else "wall-clock") +
        "); IQR is the interquartile range over the median (the noise of that row); min is the fastest "
        "sample. The rows of a table are sampled in turns, so they share the machine's load. Ratios "
        "are of medians from this same run. Rows are timed only after their value agreed with the reference.",
        "",
    ]
    for res in report["results"]:
        header, cells = table_lines(res)
        lines += [f"### {res['title']}", ""]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
        for c in cells:
            lines.append("| " + " | ".join(str(x) for x in c) + " |")
        lines.append("")
        for n in res.get("notes", []):
            lines.append(f"- {n}")
        for t in res["targets"]:
            lines.append(f"- **target** {_target_text(t)}")
        lines.append("")
    lines += ["### Targets", "",
              "| issue | target | ratio (medians) | ratio (fastest samples) | against | status |",
              "|---|---|---:|---:|---|---|"]
    for res in report["results"]:
        for t in res["targets"]:
            lines.append(f"| {t['issue']} | {t['label']} | {_fmt(t['ratio']) if 'ratio' in t else ''} | "
                         f"{_fmt(t['ratio_of_min']) if 'ratio_of_min' in t else ''} | "
                         f"{t.get('against', '')} | {t['status']} |")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def write_plots(folder: str, report: dict[str, Any], log=print) -> None:
    """One horizontal bar chart per table (needs matplotlib; skipped otherwise)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("(matplotlib not installed: no plots)")
        return
    os.makedirs(folder, exist_ok=True)
    for res in report["results"]:
        unit = res["unit"]
        if unit == "value":  # rows of different kinds (memory_leak): nothing to compare in a bar chart
            continue
        if unit in UNITS:
            items = [(n, r["median"] * UNITS[unit]) for n, r in res["rows"].items() if "median" in r]
            label = "µs per op" if unit == "us" else unit
        else:
            items = [(n, r["value"]) for n, r in res["rows"].items() if isinstance(r.get("value"), (int, float))]
            label = unit
        if not items:
            continue
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(items) + 1.4))
        names = [n for n, _ in items][::-1]
        vals = [v for _, v in items][::-1]
        colors = ["tab:orange" if n.startswith("funcgrad") else "tab:gray" if n.startswith("numpy") else "tab:blue"
                  for n in names]
        ax.barh(names, vals, color=colors)
        if unit in UNITS and max(vals) / max(min(vals), 1e-12) > 30:
            ax.set_xscale("log")
        ax.set_xlabel(label)
        fig.suptitle("\n".join(textwrap.wrap(res["title"], 90)), fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(folder, f"{res['name']}.png"), dpi=90)
        plt.close(fig)
    log(f"plots written to {folder}/")


# ---------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer samples and sizes (under a minute)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one sample: checks the harness, not speed")
    parser.add_argument("--only", action="append", choices=NAMES, metavar="NAME",
                        help="run only this workload (repeatable): " + ", ".join(NAMES))
    parser.add_argument("--peers", default=",".join(peers.ALL),
                        help="comma-separated peers to compare with (default: %(default)s; 'none' for none)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default=None,
                        help="which time the tables show: the process's CPU time (default with --threads one; "
                             "robust on a shared machine since every library runs one thread) or wall-clock time "
                             "(default, and the only choice, with threaded rows); both are in --json")
    parser.add_argument("--threads", choices=threads.MODES, default="one",
                        help="one: every library pinned to one thread (default; the targets are for it); "
                             "default: each library's own thread count; both: each table timed with one thread, "
                             "then with the defaults, and the medians side by side (needs threadpoolctl, no jax)")
    parser.add_argument("--json", metavar="FILE", help="write all results to this JSON file")
    parser.add_argument("--markdown", metavar="FILE", help="write the tables as Markdown (for RESULTS.md)")
    parser.add_argument("--plots", metavar="DIR", help="write one PNG bar chart per table (needs matplotlib)")
    args = parser.parse_args(argv)

    chosen = set() if args.peers.strip() in ("", "none") else {p.strip() for p in args.peers.split(",")}
    unknown = chosen - set(peers.ALL)
    if unknown:
        parser.error(f"unknown peer(s) {sorted(unknown)}; choose from {', '.join(peers.ALL)}")
    peers.set_enabled(chosen)
    refused = threads.check_mode(args.threads, chosen, args.clock)
    if refused:
        parser.error(refused)
    clock = args.clock or ("cpu" if args.threads == "one" else "wall")
    ctx = Context(quick=args.quick, smoke=args.smoke, clock=clock)
    if args.threads != "one":
        peers.set_pinned(False)
        try:
            return _main(args, ctx, threads.describe_defaults(), argv)
        finally:
            peers.set_pinned(True)
    previous_env = peers.pin_thread_env()  # for the peers imported from here on, and the memory probes
    pinned = peers.pin_threads_now()
    try:
        return _main(args, ctx, pinned, argv)
    finally:
        peers.unpin_threads()
        peers.restore_env(previous_env)  # when called in-process (the tests), leave the environment as it was


def _main(args: argparse.Namespace, ctx: Context, thread_text: str, argv: Sequence[str] | None) -> dict[str, Any]:
    versions = peers.versions()  # imports the peers (pinned) before anything is timed
    source = peers.source_state()
    machine = peers.machine()
    load_start = machine.get("loadavg")
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    print(f"funcgrad benchmarks  {time.strftime('%Y-%m-%d %H:%M %Z')}  mode {mode}  clock {ctx.clock}")
    print(f"  versions: {versions}; funcgrad source {source}")
    print(f"  machine: {machine.get('cpu')} x{machine.get('cpus')}, load {load_start}")
    print(f"  BLAS: {machine['blas']}")
    if args.threads == "one":
        print(f"  threads: one per library ({thread_text}, torch.set_num_threads(1), XLA_FLAGS one thread)")
    else:
        print(f"  threads: --threads {args.threads}; {thread_text}")
    if machine["openblas_env"]:
        print(f"  note: {machine['openblas_env']} is set; NumPy's OpenBLAS then runs that kernel, not its "
              f"native one. For representative numbers: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "
              f"python -m benchmarks ...")
    started = time.time()
    results = []
    switch = threads.Switch() if args.threads == "both" else None
    for name in args.only or NAMES:
        t0 = time.time()
        for table in build(name, ctx):
            if switch is None:
                results.append(dict(run_table(table, ctx), threads=args.threads))
                continue
            results += _run_both(table, ctx, switch, thread_text)
        print(f"  ({name}: {time.time() - t0:.1f} s)")
    wall = time.time() - started
    end = peers.machine().get("loadavg")
    print(f"\ndone in {wall:.0f} s; load average at end {end}")
    report = {
        "command": "python -m benchmarks " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "mode": mode,
        "clock": ctx.clock,
        "wall_s": wall,
        "threads": args.threads,
        "environment": {"versions": versions, "source": source, "machine": machine, "threads": thread_text,
                        "load_start": load_start, "load_end": end},
        "results": results,
    }
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1, default=float)
    if args.markdown:
        write_markdown(args.markdown, report)
    if args.plots:
        write_plots(args.plots, report)
    return report


def _run_both(table: Table, ctx: Context, switch: threads.Switch, thread_text: str) -> list[dict[str, Any]]:
    """``--threads both``: the table with one thread, again with the defaults (no targets: they are for one
    thread), then both medians side by side."""
    with switch.one():
        one = dict(run_table(table, ctx), threads="one")
    threaded = dataclasses.replace(table, title=f"{table.title} [default threads]", targets=[],
                                   notes=list(table.notes))
    default = dict(run_table(threaded, ctx), threads="default")
    both = threads.side_by_side(one, default, f"{thread_text}; medians of the two tables above, {ctx.clock} clock, "
                                              f"this run; load average {peers.machine().get('loadavg')}")
    print(f"\n== {both['title']}")
    _print_table(both, threaded, print)
    print(f"  ({both['notes'][0]})")
    return [one, default, both]


if __name__ == "__main__":
    main()
