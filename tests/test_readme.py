"""README.md and docs/*.md stay true to the code: links into a .py file point at what their
text names, every relative link leads to something in the repository, README stays one page."""
import glob
import os
import re

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
PAGES = [README] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")           # [text](target), images too
CODE_LINK = re.compile(r"([\w./-]+\.py)#L(\d+)$")           # file.py#L<n>


def links():
    """(page, text, target) of every markdown link outside fenced code blocks."""
    found = []
    for page in PAGES:
        with open(page, encoding="utf-8") as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
        found += [(page, m.group(1), m.group(2)) for m in LINK.finditer(text)]
    return found


def resolve(page, target):
    return os.path.normpath(os.path.join(os.path.dirname(page), target.split("#")[0]))


def names_it(line, text):
    """Whether a source line is the `def` of a function the link text names, or the
    `Trick N: title` comment of the trick it names."""
    plain = re.sub(r"[`*_]", " ", text).lower()
    plain = " ".join(plain.split())
    words = set(re.findall(r"[A-Za-z_]\w*", text))
    d = re.match(r"\s*def (\w+)\(", line)
    if d and d.group(1) in words:
        return True
    t = re.search(r"#\s*Trick (\d+): (.+)", line)
    return bool(t) and (t.group(2).strip().lower() in plain or f"trick {t.group(1)}" in plain)


def label(page, text, target):
    return f"{os.path.relpath(page, ROOT)}: [{text}]({target})"


CODE_LINKS = [link for link in links() if CODE_LINK.search(link[2])]
RELATIVE = [link for link in links() if not re.match(r"[a-z]+:|#", link[2])]


def test_readme_links_each_trick():
    texts = " ".join(text.lower() for page, text, _ in CODE_LINKS if page == README)
    for title in ("clipped double-q learning", "delayed policy updates", "target policy smoothing"):
        assert title in texts, f"README.md has no code link for the trick {title!r}"


@pytest.mark.parametrize("page,text,target", CODE_LINKS, ids=[label(*x) for x in CODE_LINKS])
def test_code_link_points_at_what_it_names(page, text, target):
    path = resolve(page, target)
    assert os.path.isfile(path), f"{label(page, text, target)}: no file {path}"
    n = int(CODE_LINK.search(target).group(2))
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if 0 < n <= len(lines) and names_it(lines[n - 1], text):  # the very line, not one near it
        return
    holds = lines[n - 1].strip() if 0 < n <= len(lines) else f"nothing (the file has {len(lines)} lines)"
    now = [i + 1 for i, line in enumerate(lines) if names_it(line, text)]
    pytest.fail(f"{label(page, text, target)} is stale: line {n} now holds {holds!r}; "
                f"what the text names is at line(s) {now or 'none'}")


@pytest.mark.parametrize("page,text,target", RELATIVE, ids=[label(*x) for x in RELATIVE])
def test_relative_link_exists(page, text, target):
    path = resolve(page, target)
    assert os.path.commonpath([ROOT, path]) == ROOT, f"{label(page, text, target)} leaves the repository"
    assert os.path.exists(path), f"{label(page, text, target)}: {os.path.relpath(path, ROOT)} does not exist"


def test_readme_is_one_page():
    size = os.path.getsize(README)
    assert size <= 12_500, f"README.md is {size} bytes; move sections to docs/ (at most 12,500)"


def test_the_quickstart_minutes_are_the_committed_runs():
    """README's 'How long' numbers and docs/usage.md's, each as benchmarks/check_results.py
    --times computes it from the committed runs."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("check_results", os.path.join(ROOT, "benchmarks",
                                                                               "check_results.py"))
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    t = check.newcomer_times()
    first = (f"first reached 300 after {min(t['first']):.0f}-{max(t['first']):.0f} minutes "
             f"(median {sorted(t['first'])[len(t['first']) // 2]:.0f})")
    said = {README: [f"{t['alone']:.0f} env steps/s", f"500,000 steps in about {t['worst_minutes']:.0f} minutes",
                     f"(seed 0 took {t['seed0']:,})",
                     f"about {t['rate']:.0f} env steps/s", first],
            os.path.join(ROOT, "docs", "usage.md"): [
                f"{t['alone']:.0f} env steps/s", f"about {t['rate']:.0f} env steps/s", first,
                f"first reached 300 at {t['seed0']:,} steps, {t['seed0_log_minutes']:.1f} minutes into its log",
                f"solved after {min(t['solved']):.0f}-{max(t['solved']):.0f} minutes on "
                f"{len(t['solved'])} of 10 (median {float(np.median(t['solved'])):.0f};"]}
    for page, strings in said.items():
        with open(page, encoding="utf-8") as f:
            text = " ".join(f.read().split())
        missing = [s for s in strings if s not in text]
        assert not missing, (page, missing)


def test_the_results_line_is_the_committed_runs():
    """README's seeds 10-19 sentence, from their progress.txt."""
    from plot import read_table
    first = []
    for seed in range(10, 20):
        t = read_table(os.path.join(ROOT, "results", "BipedalWalker-v3",
                                           f"td3-BipedalWalker-v3_s{seed}", "progress.txt"))
        x, r = np.asarray(t["TotalEnvInteracts"]), np.asarray(t["AverageTestEpRet"])
        hit = (r >= 300) & (x <= 150_000)
        if hit.any():
            first.append(int(x[np.argmax(hit)]))
    with open(README, encoding="utf-8") as f:
        text = " ".join(f.read().split())
    assert (f"{len(first)} of 10 at 300 by 150,000 env steps (median {int(np.median(first)):,})"
            in text)


def test_the_pendulum_sentence_is_the_committed_runs():
    """README's smoke test: its minutes (the committed runs' Time after the command's 8 epochs)
    and the first test return past -200, seeds 0-2 committed."""
    from plot import read_table
    first, minutes = [], []
    for seed in range(3):
        t = read_table(os.path.join(ROOT, "results", "Pendulum-v1", f"td3-Pendulum-v1_s{seed}",
                                    "progress.txt"))
        x, r = np.asarray(t["TotalEnvInteracts"]), np.asarray(t["AverageTestEpRet"])
        first.append(int(x[np.argmax(r > -200)]))
        assert r[0] < -1_200  # the random start, "about -1,300"
        minutes.append(float(np.asarray(t["Time"])[7]) / 60)  # the command's 8 epochs
    with open(README, encoding="utf-8") as f:
        text = " ".join(f.read().split())
    assert f"past -200 within {min(first):,}-{max(first):,} env steps (seeds 0-2 committed)" in text
    said = f"# {int(min(minutes))}-{int(max(minutes)) + 1} minutes"
    assert said in text and "--epochs 8 --steps_per_epoch 1000 --start_steps 1000" in text, said


def test_the_single_critic_sentence_is_the_committed_ablations():
    """README: every single-critic run overestimates (TestQBias over its second half above 0,
    where the runs of TD3 and the other one-trick ablations stay under 0.5) and is lower at
    200,000 env steps than every run of TD3 and of the other one-trick ablations."""
    from plot import read_table

    def runs(name):
        out = []
        for f in sorted(glob.glob(os.path.join(ROOT, "results", "ablations", name, "*",
                                               "progress.txt"))):
            t = read_table(f)
            at = np.asarray(t["TotalEnvInteracts"]) == 200_000
            bias = np.asarray(t["TestQBias"])
            out.append((float(np.asarray(t["AverageTestEpRet"])[at][0]),
                        float(np.median(bias[len(bias) // 2:]))))
        assert len(out) == 3, name
        return out
    single = runs("td3-BipedalWalker-v3-no_twin")
    twins = [r for name in ("td3-BipedalWalker-v3", "td3-BipedalWalker-v3-no_delay",
                            "td3-BipedalWalker-v3-no_smoothing") for r in runs(name)]
    assert all(bias > 0 for _, bias in single) and all(bias < 0.5 for _, bias in twins)
    assert max(ret for ret, _ in single) < min(ret for ret, _ in twins)
    with open(README, encoding="utf-8") as f:
        text = " ".join(f.read().split())
    assert "every single-critic run overestimates and is far lower at 200,000 env steps" in text


def test_each_notebooks_time_is_the_one_stored_in_it():
    """README's time beside each notebook is its cells' run as the stored notebook records it
    (from the first cell's start to the last cell's end), to its rounding."""
    import datetime
    import json
    text = open(README, encoding="utf-8").read()
    text = text[text.index("## Notebooks"):]
    text = text[:text.index("\n## ")]
    when = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    paths = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
    assert len(paths) == 4
    for path in paths:
        name = os.path.basename(path)
        said = re.search(rf"\(notebooks/{re.escape(name)}\)[^\n]*\n?[^\n]*?\((?:about\s+)?"
                         r"([\d.]+)\s+(s|minutes?)\b", text)
        assert said, f"README gives no time for {name}"
        runs = [c["metadata"].get("execution") for c in json.load(open(path))["cells"]
                if c["cell_type"] == "code"]
        runs = [r for r in runs if r]
        took = (when(runs[-1]["shell.execute_reply"])
                - when(runs[0]["iopub.execute_input"])).total_seconds()
        value = float(said.group(1)) * (60 if said.group(2).startswith("minute") else 1)
        assert abs(value - took) <= max(1.0, 0.1 * took), (name, value, took)
