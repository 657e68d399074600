"""The repo speaks to its readers: no tracked file names an absolute path of one machine's own folders or an
issue number of a tracker the repo does not hold, and each page of docs/ stays a reference (at most 250 lines;
the history of what was tried lives in the ledgers of docs/experiments/)."""
import re
import subprocess

from conftest import ROOT

# the repo's pre-submit rule: a rooted path of two or more folders that is no system folder or URL path
MACHINE_PATH = re.compile(r"(?<![\w.~:/}$-])/(?!(usr|etc|dev|proc|sys|bin|lib|lib64|opt|var|tmp|run|srv|sbin|mnt|v1|"
                          r"api|admin|a|ext|path)/)[a-z][a-z0-9_-]*/[\w.-]+/")
# a home or work folder named alone ("DIR=/work/release-full"), which the rule above needs a second slash for
HOME_PATH = re.compile(r"(?<![\w.~:/}$-])/(work|root|home|Users)/[\w.-]+")
ISSUE = re.compile(r"[Ii]ssues? #?[0-9]+")
MAX_PAGE_LINES = 250


def tracked_text_files():
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, names.split("\0")):
        path = ROOT / name
        if not path.is_file():  # deleted in the work tree, not yet committed
            continue
        try:
            yield name, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # images, archives
            continue


def findings():
    bad = []
    for name, text in tracked_text_files():
        paths_apply = not name.startswith("tests/") and not name.endswith((".json", ".jsonl"))
        for n, line in enumerate(text.splitlines(), 1):
            hit = (paths_apply and (MACHINE_PATH.search(line) or HOME_PATH.search(line))) or ISSUE.search(line)
            if hit:
                bad.append(f"{name}:{n}: {hit.group(0)!r}")
    return bad


def test_no_machine_path_and_no_issue_number_in_a_tracked_file():
    bad = findings()
    assert not bad, "absolute machine paths or issue numbers (write RUN/, DIR or a relative path instead):\n" + "\n".join(bad)


def test_the_rules_catch_what_they_are_for():
    assert MACHINE_PATH.search("hydra.run.dir=/scratch/e43/pron") and HOME_PATH.search("DIR=/work/release-full")
    word = "issue"  # split so that this file passes its own scan
    assert ISSUE.search(f"the levers of {word} 43") and ISSUE.search(f"{word.title()}s #41")
    assert not ISSUE.search(f"the {word}'s target")
    for fine in ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "https://github.com/eth-sri/ChatProtect",
                 "runs/parser/best", "/tmp/refcache", "$QASEM_DATA_DIR/chatprotect/x.jsonl", "~/data/x/"):
        assert not (MACHINE_PATH.search(fine) or HOME_PATH.search(fine)), fine


def test_each_docs_page_is_a_reference_of_at_most_250_lines():
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in sorted((ROOT / "docs").glob("*.md"))
            if (n := len(p.read_text().splitlines())) > MAX_PAGE_LINES]
    assert not long, f"pages over {MAX_PAGE_LINES} lines (move the history to docs/experiments/): {long}"
