"""fastspec's fuzzer: random and adversarial calls of every op through ``fastspec.arrays``,
compared bit for bit with ``fastspec.reference``, optionally against the bindings built with
ASan + UBSan. ``python -m tests.fuzz --help``; docs/fuzzing.md.

    targets.py      the ops (verify once per strategy), their generators and references
    gen_*.py        well-formed random calls of each op
    values.py       adversarial values poked into well-formed calls
    malform.py      calls broken on purpose (each must be refused)
    case.py         a case and its JSON form;  corpus.py / corpus/: cases that once failed
    check.py        one case: run, compare, judge
    campaign.py     cases from a seed; a campaign in this process
    worker.py       one fuzzing process;  supervisor.py: workers, crashes, progress, summary
    sanitizer.py    the environment that loads the sanitized bindings
"""
