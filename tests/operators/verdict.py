"""Reads a Ginkgo JSON report of the RayCluster specs and says whether the run is as expected:
every failed spec listed in known-failures, at least the expected number passed. Prints the
counts as the README's corpus table states them.

    python3 verdict.py REPORT KNOWN_FAILURES EXPECTED_PASSED
"""

import json
import sys

# The file whose specs the run selects.
SPECS_FILE = "raycluster_controller_test.go"


def main(report_path, known_path, expected_passed):
    known = {}
    with open(known_path) as known_file:
        for line in known_file:
            if line.strip() and not line.startswith("#"):
                spec, why = line.rstrip("\n").split("\t", 1)
                known[spec] = why
    with open(report_path) as report_file:
        suites = json.load(report_file)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    unexpected = []
    for suite in suites:
        for spec in suite.get("SpecReports") or []:
            location = (spec.get("LeafNodeLocation") or {}).get("FileName", "")
            if spec.get("LeafNodeType") != "It" or not location.endswith(SPECS_FILE):
                continue
            state = spec["State"]
            name = " ".join(spec.get("ContainerHierarchyTexts") or []) + " " + spec["LeafNodeText"]
            if state == "passed":
                counts["passed"] += 1
            elif state in ("failed", "panicked", "timedout", "aborted", "interrupted"):
                counts["failed"] += 1
                if name not in known:
                    unexpected.append(name)
            elif state == "skipped":
                counts["skipped"] += 1
    run = counts["passed"] + counts["failed"]
    print(f"kuberay: {counts['passed']} passed / {run} run / {counts['skipped']} skipped "
          f"(known to fail: {len(known)})")
    ok = True
    for name in unexpected:
        print(f"kuberay: unexpected failure: {name}")
        ok = False
    if counts["passed"] < expected_passed:
        print(f"kuberay: {counts['passed']} specs passed, fewer than the {expected_passed} expected")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
