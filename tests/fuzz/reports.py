"""A sanitizer report (or any other last words of a dying process) summed up in one line."""

from __future__ import annotations

import re
import signal

_ERROR = re.compile(r"runtime error:|ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer)")


def _short_path(text: str) -> str:
    return re.sub(r"\S*/custom_ops/", "custom_ops/", text)


def report_summary(text: str) -> tuple[str, str]:
    """(signature, excerpt): where and what the report says ("custom_ops/cpu/x.cc:60:20: signed
    integer overflow"), and its error line with the first five frames. Without a report: the
    last line written (an exception) and the last fifteen."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _ERROR.search(line)), None)
    if start is None:
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        return last[:300], "\n".join(lines[-15:])
    error = lines[start].strip()
    frames = [line.strip() for line in lines[start + 1 : start + 30] if re.match(r"\s*#[0-4] ", line)]
    if "runtime error:" in error:  # UBSan: "FILE:LINE:COL: runtime error: KIND: details"
        where, what = error.split(": runtime error:", 1)
        return f"{_short_path(where)}: {what.split(':')[0].strip()}", "\n".join([error, *frames])
    what = re.sub(r" on (address|unknown address) 0x[0-9a-f]+.*", "", error.split("ERROR: ", 1)[1])
    where = _short_path(re.sub(r"^#0 0x[0-9a-f]+ in ", "", frames[0])) if frames else ""
    return f"{where}: {what}", "\n".join([error, *frames])


def death(exit_code: int) -> str:
    """How a process ended, from its exit code ("crash (SIGABRT)")."""
    if -exit_code in signal.valid_signals():
        return f"crash ({signal.Signals(-exit_code).name})"
    return f"crash (exit {exit_code})"
