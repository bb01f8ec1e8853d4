"""Reads the Ginkgo JSON report of an operator's suite run against wasmop and says whether the run
is as expected: every failed spec listed in known-failures, at least the expected number passed.
Prints the counts as the README's corpus table states them.

    python3 verdict.py OPERATOR REPORT KNOWN_FAILURES EXPECTED_PASSED [SPEC_FILE]

SPEC_FILE, when given, counts only the specs of that file (the ones the run focused on).
"""

import json
import os
import sys

FAILED = ("failed", "panicked", "timedout", "aborted", "interrupted")


def known_failures(path):
    """The specs known-failures lists, by full text, each with why it fails."""
    known = {}
    with open(path) as known_file:
        for line in known_file:
            if line.strip() and not line.startswith("#"):
                spec, why = line.rstrip("\n").split("\t", 1)
                known[spec] = why
    return known


def specs(report, spec_file):
    """Each It of the report (of spec_file, if given) as (full text, state)."""
    for suite in report:
        for spec in suite.get("SpecReports") or []:
            location = (spec.get("LeafNodeLocation") or {}).get("FileName", "")
            if spec.get("LeafNodeType") != "It" or not location.endswith(spec_file):
                continue
            name = " ".join(spec.get("ContainerHierarchyTexts") or []) + " " + spec["LeafNodeText"]
            yield name, spec["State"]


def main(operator, report_path, known_path, expected_passed, spec_file=""):
    if not os.path.exists(report_path):
        print(f"{operator}: no report: the suite did not build or run (see its output above)")
        return 1
    known = known_failures(known_path)
    with open(report_path) as report_file:
        report = json.load(report_file)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    unexpected = []
    for name, state in specs(report, spec_file):
        if state == "passed":
            counts["passed"] += 1
        elif state in FAILED:
            counts["failed"] += 1
            if name not in known:
                unexpected.append(name)
        elif state == "skipped":
            counts["skipped"] += 1
    run = counts["passed"] + counts["failed"]
    print(f"{operator}: {counts['passed']} passed / {run} run / {counts['skipped']} skipped "
          f"(known to fail: {len(known)})")
    ok = True
    for name in unexpected:
        print(f"{operator}: unexpected failure: {name}")
        ok = False
    if counts["passed"] < expected_passed:
        print(f"{operator}: {counts['passed']} specs passed, fewer than the {expected_passed} expected")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:6]))
