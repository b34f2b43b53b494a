"""The ONNX backend node test suite through nn2c: every applicable case compiled, built, run, compared.

Cases, the applicability filter and the isolated runner are in tests/onnx_backend_cases.py (shared
with tests/test_onnx_backend.py, which runs a fixed subset in CI). Each case runs in its own
process with a 60 s limit; at most two run at once (the CI machines have two cores).

Writes the results section of docs/onnx-backend.md (not with --only: a subset would misreport).
With --sanitize, each case that compiles is built with ASan + UBSan and run on its inputs and on
extreme inputs (tests/onnx_backend_sanitize.py); that run writes the sanitizer section instead.

    python bench/onnx_backend.py                       # every applicable case, ~10 min on 2 cores
    python bench/onnx_backend.py --sanitize --jobs 1   # the same under ASan + UBSan, + extreme inputs
    python bench/onnx_backend.py --only conv --no-docs  # cases whose name or operator contains "conv"
    python bench/onnx_backend.py --json results.json   # + one record per case, machine-readable
    python bench/onnx_backend.py --from-json results.json  # the report again, without running
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from report_file import replace_section  # noqa: E402
from tests.onnx_backend_cases import (  # noqa: E402
    BUG_STATUSES,
    BUILD_FAILURE,
    CASE_TIMEOUT,
    PASS,
    REFUSED,
    BackendCase,
    Outcome,
    all_cases,
    applicable_cases,
    excluded_counts,
    run_isolated,
    select,
)
from tests.onnx_backend_sanitize import FLOAT_EXTREMES, SANITIZER, run_case_sanitized  # noqa: E402

DOC = ROOT / "docs" / "onnx-backend.md"
SECTION = "onnx-backend"
SANITIZE_SECTION = "onnx-backend-sanitize"
MAX_JOBS = 2  # the machines this runs on have two cores, shared
ALL_BUGS = (*BUG_STATUSES, SANITIZER)

# What the sanitizer run found, fixed at the root; each has a regression test (named here).
FIXED: list[str] = [
    "TensorScatter with a write index near the int64 limit (test_tensorscatter_3d / _circular on extreme "
    "inputs): write index + sequence position overflowed int64 in nn2c_tensor_scatter (UBSan); the index is "
    "now reduced into the cache first (tests/test_onnx_movement.py::"
    "test_runtime_operand_kernels_are_sanitizer_clean_on_extreme_inputs, int64 write indices at their limits)",
]


def run_all(cases: list[BackendCase], jobs: int, sanitize: bool = False) -> Iterator[Outcome]:
    """Outcomes in the order the cases finish. Threads only wait here: each case is its own process."""
    runner = run_case_sanitized if sanitize else None
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(lambda case: run_isolated(case, runner=runner), cases)


def run_with_progress(cases: list[BackendCase], jobs: int, sanitize: bool = False) -> list[Outcome]:
    outcomes = []
    for index, outcome in enumerate(run_all(cases, jobs, sanitize), 1):
        outcomes.append(outcome)
        if outcome.status in ALL_BUGS:  # the ones the lead must see even in a long log
            print(f"  {outcome.summary()}", file=sys.stderr)
        if index % 50 == 0 or index == len(cases):
            passed = sum(o.status == PASS for o in outcomes)
            print(f"[{index}/{len(cases)}] {passed} passed", file=sys.stderr)
    return outcomes


@dataclass
class Run:
    outcomes: list[Outcome]
    seconds: float
    jobs: int
    revision: str  # the nn2c commit it ran at
    complete: bool  # every applicable case (not an --only subset)
    sanitize: bool = False  # built with ASan + UBSan, run on extreme inputs too

    @property
    def passed(self) -> int:
        return sum(o.status == PASS for o in self.outcomes)

    def pass_line(self) -> str:
        return (f"{self.passed}/{len(self.outcomes)} passed "
                f"({100 * self.passed / max(len(self.outcomes), 1):.1f} %) in {self.seconds:.0f} s")


def run_cases(cases: list[BackendCase], jobs: int, complete: bool, sanitize: bool = False) -> Run:
    print(f"{len(cases)} cases, {jobs} at a time, {CASE_TIMEOUT:g} s limit each"
          + (", ASan + UBSan" if sanitize else ""), file=sys.stderr)
    started = time.monotonic()
    outcomes = sorted(run_with_progress(cases, jobs, sanitize), key=lambda o: o.case)
    return Run(outcomes, time.monotonic() - started, jobs, git_revision(), complete, sanitize)


def git_revision() -> str:
    """The commit the run was made at (-dirty: with uncommitted changes to tracked files)."""
    result = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                            text=True)
    return result.stdout.strip() or "(not a git checkout)"


# --- the report -----------------------------------------------------------------------------------
def by_operator(outcomes: Iterable[Outcome]) -> dict[str, list[Outcome]]:
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[outcome.op_type].append(outcome)
    return dict(sorted(groups.items()))


def failure_groups(outcomes: Iterable[Outcome]) -> list[tuple[str, list[Outcome]]]:
    """Failures grouped by status and reason, the largest group first."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        if outcome.status != PASS:
            groups[f"{outcome.status}: {outcome.reason}"].append(outcome)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


# the broad kinds of failure, for planning: matched on the grouped reasons (report only)
THEMES = [
    ("an ONNX operator without a converter", r"no ONNX converter for"),
    ("an imported operator without a C kernel", r"no kernel for the imported"),
    ("an operand nn2c needs constant is a graph input (weights, bounds, scales)",
     r"constant|run-time|run time"),
    ("a shape the frontend could not infer (function bodies computing shapes)", r"could not be inferred"),
    ("an integer dtype variant (uint8, int16, int8 without quantization)",
     r"\b(u?int8|int16)\b|quantiz"),
]


def failure_theme(outcome: Outcome) -> str:
    if outcome.status != REFUSED:
        return outcome.status
    for theme, pattern in THEMES:
        if re.search(pattern, outcome.reason):
            return theme
    return "another operator variant (attributes, rank, opset)"


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def failure_cell(outcomes: list[Outcome]) -> str:
    parts = []
    for reason, group in failure_groups(outcomes):
        example = group[0].case if len(group) == 1 else f"{len(group)} cases, e.g. {group[0].case}"
        parts.append(f"{cell(reason)} ({example})")
    return "<br>".join(parts)


def summary_lines(run: Run) -> list[str]:
    import onnx

    outcomes = run.outcomes
    statuses = Counter(o.status for o in outcomes)
    excluded = excluded_counts()
    return [
        f"nn2c {run.revision}, onnx {onnx.__version__}: {len(all_cases())} node cases, {len(outcomes)} applicable "
        f"({len(by_operator(outcomes))} operator types), {sum(excluded.values())} excluded.",
        "",
        f"**{run.passed} of {len(outcomes)} applicable cases pass "
        f"({100 * run.passed / max(len(outcomes), 1):.1f} %).** "
        f"Run time {run.seconds / 60:.1f} min with {run.jobs} cases at a time.",
        "",
        "| outcome | cases |",
        "|---|---|",
        *(f"| {status} | {count} |" for status, count in statuses.most_common()),
    ]


def excluded_lines() -> list[str]:
    return ["| excluded because | cases |", "|---|---|",
            *(f"| {cell(reason)} | {count} |" for reason, count in excluded_counts().items())]


def bug_lines(outcomes: list[Outcome]) -> list[str]:
    bugs = [o for o in outcomes if o.status in BUG_STATUSES]
    if not bugs:
        return ["None: no crash, timeout, C build failure or failing generated program."]
    return ["| case | operator | outcome | detail |", "|---|---|---|---|",
            *(f"| {o.case} | {o.op_type} | {o.status} | {cell(bug_detail(o))} |" for o in bugs)]


def bug_detail(outcome: Outcome) -> str:
    if outcome.detail and outcome.reason and outcome.reason not in outcome.detail:
        return f"{outcome.reason}: {outcome.detail}"
    return outcome.detail or outcome.reason


def theme_lines(outcomes: list[Outcome]) -> list[str]:
    themes = Counter(failure_theme(o) for o in outcomes if o.status != PASS)
    return ["| failing because of | cases |", "|---|---|",
            *(f"| {cell(theme)} | {count} |" for theme, count in themes.most_common())]


def top_reason_lines(outcomes: list[Outcome], limit: int = 30) -> list[str]:
    lines = ["| failure | cases | operator types |", "|---|---|---|"]
    for reason, group in failure_groups(outcomes)[:limit]:
        ops = sorted({o.op_type for o in group})
        shown = ", ".join(ops[:8]) + (f" and {len(ops) - 8} more" if len(ops) > 8 else "")
        lines.append(f"| {cell(reason)} | {len(group)} | {shown} |")
    return lines


def operator_lines(outcomes: list[Outcome]) -> list[str]:
    lines = ["| operator | cases | pass | failures (outcome: reason (cases)) |", "|---|---|---|---|"]
    for op, group in by_operator(outcomes).items():
        passed = sum(o.status == PASS for o in group)
        lines.append(f"| {op} | {len(group)} | {passed} | {failure_cell(group)} |")
    return lines


def most_failing_lines(outcomes: list[Outcome], limit: int = 30) -> list[str]:
    ranked = sorted(by_operator(outcomes).items(),
                    key=lambda kv: (-sum(o.status != PASS for o in kv[1]), kv[0]))
    lines = ["| operator | failing cases | of | main reason |", "|---|---|---|---|"]
    for op, group in ranked[:limit]:
        failing = [o for o in group if o.status != PASS]
        if failing:
            lines.append(f"| {op} | {len(failing)} | {len(group)} | {cell(failure_groups(failing)[0][0])} |")
    return lines


def report(run: Run) -> str:
    outcomes = run.outcomes
    sections = [
        ("", summary_lines(run)),
        ("### Excluded cases", excluded_lines()),
        ("### Compiler bugs (crash, timeout, C build failure, failing generated program)", bug_lines(outcomes)),
        ("### Failures by kind", theme_lines(outcomes)),
        ("### Most frequent failure reasons", top_reason_lines(outcomes)),
        ("### Operator types with the most failing cases", most_failing_lines(outcomes)),
        ("### Every operator type", operator_lines(outcomes)),
    ]
    return "\n\n".join("\n".join(([title, ""] if title else []) + lines) for title, lines in sections) + "\n"


def sanitize_report(run: Run) -> str:
    """The sanitizer run: cases built, clean, the findings left, the findings fixed."""
    import onnx

    outcomes = run.outcomes
    built = [o for o in outcomes if o.status not in (REFUSED, BUILD_FAILURE)]
    findings = [o for o in outcomes if o.status in ALL_BUGS]
    statuses = Counter(o.status for o in outcomes)
    lines = [
        f"nn2c {run.revision}, onnx {onnx.__version__}, `bench/onnx_backend.py --sanitize`: of the "
        f"{len(outcomes)} applicable cases, {len(built)} compiled and were built with "
        "`-fsanitize=address,undefined -fno-sanitize-recover=all` (-O1) and run on their inputs and on "
        f"up to {len(FLOAT_EXTREMES)} records of extreme inputs (floats "
        "0, ±3e38, ±inf, NaN, ±1e-40; integers min, max, 0, -1; bools both) plus two records mixing them "
        "element by element, each record in its own process; mismatches are judged on the case's inputs as in "
        "the plain run.",
        "",
        f"**{len(built) - len(findings)} of {len(built)} built cases are clean** (no sanitizer report, signal, "
        f"failing status or timeout); {len(findings)} findings. Run time {run.seconds / 60:.1f} min with "
        f"{run.jobs} case{'s' if run.jobs > 1 else ''} at a time.",
        "",
        "| outcome | cases |",
        "|---|---|",
        *(f"| {status} | {count} |" for status, count in statuses.most_common()),
    ]
    if findings:
        lines += ["", "| case | operator | outcome | detail |", "|---|---|---|---|",
                  *(f"| {o.case} | {o.op_type} | {o.status} | {cell(bug_detail(o))} |" for o in findings)]
    if FIXED:
        lines += ["", f"Findings of earlier sanitizer runs, fixed at the root ({len(FIXED)}; a regression test each):",
                  "", *(f"- {item}" for item in FIXED)]
    else:
        lines += ["", "Findings fixed: none (no run has had a finding yet)."]
    return "\n".join(lines) + "\n"


def write_json(path: Path, run: Run) -> None:
    import onnx

    document = {"nn2c_revision": run.revision, "onnx_version": onnx.__version__,
                "cases_in_suite": len(all_cases()), "excluded": excluded_counts(),
                "complete": run.complete, "sanitize": run.sanitize, "cases": len(run.outcomes),
                "passed": run.passed,
                "seconds": round(run.seconds, 1), "jobs": run.jobs,
                "outcomes": [o.as_dict() for o in run.outcomes]}
    path.write_text(json.dumps(document, indent=1) + "\n")


def read_json(path: Path) -> Run:
    document = json.loads(path.read_text())
    return Run([Outcome(**record) for record in document["outcomes"]], float(document["seconds"]),
               int(document["jobs"]), document["nn2c_revision"], bool(document["complete"]),
               bool(document.get("sanitize", False)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", metavar="SUBSTRING", help="only cases whose name or operator contains this")
    parser.add_argument("--jobs", type=int, default=MAX_JOBS, help=f"cases at a time (at most {MAX_JOBS})")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every outcome to FILE as JSON")
    parser.add_argument("--no-docs", action="store_true", help=f"do not rewrite {DOC.relative_to(ROOT)}")
    parser.add_argument("--sanitize", action="store_true",
                        help="build with ASan + UBSan, run on the cases' inputs and on extreme inputs")
    parser.add_argument("--from-json", type=Path, metavar="FILE",
                        help="run nothing: write the report from an earlier --json FILE")
    args = parser.parse_args(argv)
    jobs = max(1, min(args.jobs, MAX_JOBS))
    if args.from_json:
        run = read_json(args.from_json)
    else:
        run = run_cases(select(applicable_cases(), args.only), jobs, complete=not args.only,
                        sanitize=args.sanitize)
    if args.json:
        write_json(args.json, run)
    text, section = (sanitize_report(run), SANITIZE_SECTION) if run.sanitize else (report(run), SECTION)
    if run.complete and not args.no_docs:
        replace_section(section, text, DOC)
        print(f"wrote {DOC.relative_to(ROOT)}", file=sys.stderr)
    else:  # a subset would misreport in the docs
        print(text)
    print(run.pass_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
