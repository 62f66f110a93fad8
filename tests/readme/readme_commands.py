#!/usr/bin/python3
"""Runs the commands of README.md's "Using it" section in order, as a reader pasting them after the set-up.

The commands are the lines of the section's ```bash fenced blocks and of its indented (4-space) code blocks,
in the order they appear (a trailing backslash continues a line). A command whose comment says
"# needs a GPU" is skipped (listed on stdout). Everything runs in one bash process (so `cd` and `export`
carry over) in a fresh temporary folder holding build/xsp (a link to the built binary, also on PATH), with
XSP_STORE a new, empty store there and XSP_ZOO the zoo the set-up exported: the commands must name the evaluations
they made themselves (shell variables), not ids the set-up's evaluation would have taken. Prints each command's
duration (the README's "~N min" notes). Fails naming the README line, the command and its exit status at the first
command that fails, when the section holds no command at all, and when the commands left files outside out/ (the
folder .gitignore holds) besides the store.

Usage: readme_commands.py README SETUP_SH XSP_BINARY ZOO_DIR  (SETUP_SH: kept for the CTest line; not run)
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

SKIP_MARK = re.compile(r"#\s*needs a GPU", re.IGNORECASE)


def section_lines(readme_path, heading="## Using it"):
    """(line number, text) of the section from `heading` to the next level-2 heading."""
    with open(readme_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == heading)
    except StopIteration:
        sys.exit(f"readme_commands: {readme_path}: no '{heading}' heading")
    out = []
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("## "):
            break
        out.append((i + 1, lines[i]))
    return out


def commands(readme_path):
    """(line number, command) of the section's bash fenced blocks and indented code blocks."""
    found = []
    fence = None  # the info string of the open fenced block, or None outside one
    prev_blank = True
    pending = None  # (line, text) of a command continued with a backslash
    for number, line in section_lines(readme_path):
        stripped = line.strip()
        if fence is None and stripped.startswith("```"):
            fence = stripped[3:].strip()
            continue
        if fence is not None and stripped.startswith("```"):
            fence = None
            continue
        if fence is not None:
            text = line if fence == "bash" else None
        elif line.startswith("    ") and (prev_blank or (found and found[-1][0] == number - 1) or pending):
            text = line[4:]
        else:
            text = None
        prev_blank = not stripped
        if text is None or not text.strip() or (text.lstrip().startswith("#") and pending is None):
            continue
        if pending is not None:
            pending = (pending[0], pending[1] + "\n" + text)
        else:
            pending = (number, text)
        if text.rstrip().endswith("\\"):
            continue
        found.append(pending)
        pending = None
    return found


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    readme, setup, binary, zoo = sys.argv[1:]
    cmds = commands(readme)
    if not cmds:
        sys.exit(f"readme_commands: {readme}: no command in the 'Using it' section")
    work = tempfile.mkdtemp(prefix="xsp-readme-")
    try:
        os.makedirs(os.path.join(work, "build"))
        os.symlink(os.path.abspath(binary), os.path.join(work, "build", "xsp"))
        env = dict(os.environ)
        env["PATH"] = os.path.join(work, "build") + os.pathsep + env.get("PATH", "")
        env["XSP_STORE"] = os.path.join(work, "xsp.db")
        env["XSP_ZOO"] = os.path.abspath(zoo)
        # A command left in the background (`xsp serve ... &`) must not outlive a failing command: it would hold the
        # output open and the test would wait for it until its time-out.
        script = ["set -uo pipefail", "trap 'kill $(jobs -p) 2> /dev/null' EXIT"]

        def add(where, cmd):
            script.append("printf '%s\\n' " + shlex.quote(f"+ {where}: {cmd}"))
            script.append("t0=$(date +%s%N)")
            script.append(cmd)
            script.append("rc=$?; if [ $rc -ne 0 ]; then echo " +
                          shlex.quote(f"readme_commands: {where} failed: {cmd}") +
                          " \"(exit $rc)\" >&2; exit 1; fi")
            script.append("echo \"  ($(( ($(date +%s%N) - t0) / 1000000 )) ms)\"")

        del setup  # the set-up's evaluation is not run: the commands work on a fresh store
        skipped = 0
        for number, cmd in cmds:
            if SKIP_MARK.search(cmd):
                print(f"skipped ({readme}:{number}, needs a GPU): {cmd}")
                skipped += 1
                continue
            add(f"{readme}:{number}", cmd)
        print(f"readme_commands: {len(cmds) - skipped} commands to run, {skipped} skipped", flush=True)
        rc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env).returncode
        if rc != 0:
            return rc
        allowed = {"build", "out", "xsp.db", "xsp.db-wal", "xsp.db-shm", "xsp.db-journal"}
        stray = sorted(set(os.listdir(work)) - allowed)
        if stray:
            print(f"readme_commands: the commands left files outside out/: {', '.join(stray)}", file=sys.stderr)
            return 1
        print(f"readme_commands: all {len(cmds) - skipped} commands of {readme} passed")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
