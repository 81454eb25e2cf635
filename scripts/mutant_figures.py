"""The figures of a mutmut run (`make mutants`): mutants, killed, survived, timeout and not yet tried, per
module and in all, read from `mutmut results --all true` in the checkout where mutants/ is."""
from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

KINDS = ("killed", "survived", "timeout", "suspicious", "skipped", "no tests", "not checked")


def figures(lines: list[str]) -> dict[str, collections.Counter]:
    """module -> count of each status, from lines 'module.x_function__mutmut_N: status'."""
    out: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in lines:
        name, sep, status = line.strip().partition(": ")
        if not sep or "__mutmut_" not in name:
            continue
        module = name.split(".x", 1)[0] if ".x" in name else name.rsplit(".", 1)[0]
        out[module][status.strip()] += 1
    return out


def main() -> int:
    mutmut = Path(sys.executable).with_name("mutmut")
    listing = subprocess.run([str(mutmut), "results", "--all", "true"], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    by_module = figures(listing)
    tried = {module: counts for module, counts in by_module.items() if sum(counts.values()) > counts["not checked"]}
    print("| module | mutants | killed | survived | timeout | other | not tried |")
    print("|---|---|---|---|---|---|---|")
    total: collections.Counter = collections.Counter()
    for module in sorted(tried):
        counts = tried[module]
        total += counts
        other = sum(counts[k] for k in KINDS[3:6]) + sum(v for k, v in counts.items() if k not in KINDS)
        print(f"| {module} | {sum(counts.values())} | {counts['killed']} | {counts['survived']} | "
              f"{counts['timeout']} | {other} | {counts['not checked']} |")
    print(f"| all tried modules | {sum(total.values())} | {total['killed']} | {total['survived']} | "
          f"{total['timeout']} | - | {total['not checked']} |")
    untried = sorted(set(by_module) - set(tried))
    if untried:
        print(f"{len(untried)} modules not tried yet: {', '.join(untried)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
