"""The project speaks of itself only: no text file of the repository tells how
it was made (a working session, what an issue asked, a round of work, a work
item) or cites a file outside the repository (design notes, a shared folder).
TensorFlow's own terms stay allowed: `tf.Session`, "a TF 1 Session" (the
capitalized class), the profiler's session."""
import os
import re
import subprocess

from helpers.doc_blocks import ROOT

# Phrases of how the project was made, each with what it catches. "session" is
# matched in lower case after a word that makes it a sitting of work ("this
# session", "the fifth session"); TensorFlow's `Session` is capitalized.
PHRASES = [
    (r"\b(?:this|that|the|a|an|each|every|one|first|second|third|fourth|fifth|sixth|"
     r"seventh|previous|next|earlier|later|last|same|whose)\s+sessions?\b",
     "a working session"),
    (r"\bsessions?\s+(?:that|which)\s+(?:wrote|ran|made|built|kept)\b", "a working session"),
    (r"(?i)\b(?:the|this|that)\s+issue\b", "an issue of the project's work"),
    (r"(?i)\bissues?\s+(?:asks?|asked|says|wants|quotes)\b", "what an issue asked"),
    (r"(?i)\bissues?\s+#?\d+", "an issue number"),
    (r"(?i)\bitems?\s+\d+[a-z]?\b(?=\)|:|,| and)", "a work item's number"),
    (r"(?i)\bround\s+\d+\s+of\b", "a round of work"),
    (r"(?i)\bwork\s+items?\b", "a work item"),
    (r"(?i)\bthis\s+wave\b", "a wave of work"),
    (r"DESIGN\.md", "design notes outside the repository"),
    (r"\.\./shared/", "a folder outside the repository"),
]
# Binary files, and this file (it names the phrases).
SKIPPED = {os.path.join("tests", "package", "test_own_words.py")}


def repository_files():
    """The files git tracks or would add (not ignored), relative to ROOT; a
    copy without .git (a scratch copy) walks the tree instead."""
    if os.path.exists(os.path.join(ROOT, ".git")):  # a folder, or a worktree's file
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                                capture_output=True, text=True, timeout=60)
        if listed.returncode == 0:
            return [name for name in listed.stdout.splitlines()
                    if os.path.isfile(os.path.join(ROOT, name))]
    found = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in (
            "__pycache__", "build", "dist", "site") and not d.endswith(".egg-info")]
        found += [os.path.relpath(os.path.join(folder, n), ROOT) for n in names]
    return found


def findings(path, text):
    """[(line number, what it is, the line)] of each phrase in `text`."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, what in PHRASES:
            if re.search(pattern, line):
                found.append((number, what, line.strip()))
    return found


def read_text(path):
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data[:8192]:
        return None  # binary (a picture)
    return data.decode("utf-8", errors="replace")


def test_no_text_file_tells_how_the_project_was_made():
    files = [name for name in repository_files() if name not in SKIPPED]
    assert "README.md" in files and any(f.startswith("docs/") for f in files)
    problems = []
    for name in files:
        text = read_text(os.path.join(ROOT, name))
        if text is None:
            continue
        problems += [f"{name}:{number}: {what}: {line}"
                     for number, what, line in findings(name, text)]
    assert not problems, "\n".join(problems)


def test_planted_phrases_are_found_and_tensorflows_terms_are_not():
    planted = ["Measured in this session on the same machine.",
               "The rates were chosen (as the issue asks) to be slow.",
               "Timed on the fifth session's machine.",
               "See DESIGN.md for the numbers.",
               "# Issue 33, item 2: a failed save is not caught.",
               "The second round 3 of the review found it.",
               "what makes it work (see ../shared/notes)"]
    for line in planted:
        assert findings("planted.md", line), line
    allowed = ["--tfprof_file: profiles a TF 1 Session's RunMetadata",
               "use tf.compat.v1.Session or tf.Session in TF 1",
               "a step failed while profiling: end the profiler's session",
               "pip install -e \".[cpu,test]\" && python -m pytest -q",
               "tensorflow/tensorflow#62466 keeps a thread per collective"]
    for line in allowed:
        assert not findings("allowed.md", line), (line, findings("allowed.md", line))
