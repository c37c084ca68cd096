"""Speculative decoding demo: n-gram drafts on a copy-heavy workload from the project's own files.

    python -m fastspec.demo            # CPU, method ngram, K=5, TARGET_MATCH, batch 4
    python -m fastspec.demo --short    # the CI smoke run (seconds), on the fixed builtin corpus
    python -m fastspec.demo --corpus builtin   # the full run on the fixed corpus (reproducible figures)
    python -m fastspec.demo --method mtp   # draft-model speculation (configs/mtp.yaml)
    python -m fastspec.demo --method eagle3   # an EAGLE3 head over the target's aux hidden states
    python -m fastspec.demo --tree     # draft trees (top-k per depth) against the chain, method mtp by default
    python -m fastspec.demo --tree --method suffix   # the suffix cache's trees against its chains
    python -m fastspec.demo --stream   # serve the requests through a SpecEngine, streaming tokens as they come
    python -m fastspec.demo --structured-output json   # JSON-schema requests, spec off vs on, grammar drafts

Runs the same requests with speculation off and on, prints a summary table (mean accepted
length, per-position acceptance, steps saved, wall time per token, lossless check), sweeps the
n-gram size, runs the adaptive draft length beside fixed K (``--no-adaptive`` skips it), and
writes ``summary.json`` and ``acceptance.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from fastspec.cli.errors import (
    ArgumentParser,
    UserError,
    float_range,
    int_list,
    int_range,
    load_config,
    readable_file,
    user_errors,
)
from fastspec.demo.workload import CORPORA, ROOT, copy_edit_workload
from fastspec.runtime.config import MAX_SPECULATIVE_TOKENS, MAX_TREE_NODES, STRATEGIES, TREE_METHODS

# Paddle warns on import that ccache is missing; it only matters when compiling through Paddle.
warnings.filterwarnings("ignore", message="No ccache found")

DEFAULT_CONFIG = ROOT / "configs" / "ngram.yaml"
EAGLE3_DEMO_LAYERS = 4  # the demo's targets under eagle3: 4 layers, so configs/eagle3.yaml's ids 1, 2, 4 exist
METHOD_CONFIGS = {
    "mtp": ROOT / "configs" / "mtp.yaml",
    "eagle3": ROOT / "configs" / "eagle3.yaml",
    "suffix": ROOT / "configs" / "suffix.yaml",
}
PROG = "python -m fastspec.demo"


def parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--config",
        type=readable_file,
        default=None,
        help="YAML config (default: configs/ngram.yaml; configs/<method>.yaml for --method mtp / eagle3)",
    )
    p.add_argument(
        "--method",
        choices=["ngram", "suffix", "mtp", "eagle3", "none", "naive"],
        default=None,
        help="override the config's method (mtp: a draft head fed with the target's hidden states; "
        "eagle3: a head fed with the target's aux hidden states)",
    )
    p.add_argument(
        "--k", type=int_range(0, MAX_SPECULATIVE_TOKENS), default=None, help="num_speculative_tokens (default 5)"
    )
    p.add_argument(
        "--strategy",
        type=str.lower,
        choices=STRATEGIES,
        default="target_match",
        help="verify strategy (rejection, block: mtp / eagle3 only)",
    )
    p.add_argument("--batch-size", type=int_range(1), default=4, help="slots decoded together")
    p.add_argument("--requests", type=int_range(1), default=None, help="requests (default 16, --short 2)")
    p.add_argument(
        "--chunk-tokens", type=int_range(1), default=None, help="file tokens per prompt (default 320, --short 60)"
    )
    p.add_argument(
        "--corpus",
        choices=CORPORA,
        default=None,
        help="repo: chunks of the project's own files (default); builtin: the fixed corpus in "
        "fastspec/demo/data/ (default with --short; what the tests run)",
    )
    p.add_argument(
        "--ngram-sizes",
        type=int_list(1),
        default=None,
        help="n-gram sizes swept for the plot (default 1,2,3,4; --short 1,3)",
    )
    p.add_argument(
        "--model",
        choices=["replay", "transformer"],
        default="replay",
        help="replay: favours the reference rewrite (a stand-in for a trained model); transformer: random tiny model",
    )
    p.add_argument(
        "--peak",
        type=float_range(0.0, 1.0, low_open=True, high_open=True),
        default=0.92,
        help="replay model's probability on the reference token",
    )
    p.add_argument("--temperature", type=float_range(0.0), default=None, help="override sampling.temperature")
    p.add_argument(
        "--top-p",
        type=float_range(0.0, 1.0, low_open=True),
        default=1.0,
        help="sampling.top_p (default 1.0: the replay model really samples, ~8%% of tokens leave the reference)",
    )
    p.add_argument(
        "--repetition-penalty",
        type=float_range(0.0, low_open=True),
        default=None,
        help="sampling.repetition_penalty (1: off; docs/ops/process_logits.md)",
    )
    p.add_argument("--presence-penalty", type=float_range(), default=None, help="sampling.presence_penalty (0: off)")
    p.add_argument("--frequency-penalty", type=float_range(), default=None, help="sampling.frequency_penalty (0: off)")
    p.add_argument(
        "--min-p",
        type=float_range(0.0, 1.0),
        default=None,
        help="sampling.min_p: keep the tokens at least this times as likely as the most likely (0: off)",
    )
    p.add_argument(
        "--logprobs",
        type=int_range(0),
        default=None,
        help="sampling.logprobs: each token's log-probability and the N (at most 20) most likely; prints a few of "
        "the first request's and checks them against spec off (greedy and target_match: bit for bit)",
    )
    p.add_argument(
        "--static-step",
        action="store_true",
        help="run the spec-on step as two programs built once and replayed (fastspec.runtime.step.SpecStep)",
    )
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--seed", type=int_range(0), default=0, help="workload and sampling seed")
    p.add_argument("--short", action="store_true", help="a small workload for CI")
    p.add_argument(
        "--repeats",
        type=int_range(1),
        default=None,
        help="timed runs of spec off and of spec on, alternated; the table shows each one's run of median wall "
        "time (default 3, --short 1): a single run moves with whatever else the machine does",
    )
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    p.add_argument("--out", default="demo_out", help="folder for summary.json and acceptance.png")
    p.add_argument("--no-adaptive", action="store_true", help="skip the adaptive draft-length run")
    p.add_argument(
        "--tree",
        action="store_true",
        help="also run draft trees (the head's top-k per depth, or the suffix cache's, docs/trees.md) and show "
        "them against the chain (method mtp unless --method eagle3 or suffix; skips the adaptive run)",
    )
    p.add_argument(
        "--stream",
        action="store_true",
        help="serve the requests through a SpecEngine (one arriving per step) and print each request's tokens "
        "as they are accepted, then check them against spec off (docs/serving.md); skips the comparisons",
    )
    p.add_argument(
        "--tree-top-k",
        type=int_range(1, 16),
        default=2,
        help="--tree: candidates per depth (method suffix: continuations per node; default 2)",
    )
    p.add_argument(
        "--tree-nodes",
        type=int_range(2, MAX_TREE_NODES),
        default=8,
        help="--tree: nodes per tree, the last committed token included (default 8)",
    )
    p.add_argument(
        "--structured-output",
        choices=["json"],
        default=None,
        help="json: requests constrained by configs/release_note.schema.json (docs/structured_output.md): "
        "every output validated, spec off against on, accepted length with and without grammar drafts",
    )
    return p.parse_args(argv)


class ProgressBar:
    """A one-line progress bar on stderr (no dependency); off a terminal, one line when a run ends."""

    def __init__(self, label: str, width: int = 30) -> None:
        self.label, self.width, self.start = label, width, time.perf_counter()
        self.tty = sys.stderr.isatty()
        self.last_done, self.last_draw = -1, 0.0

    def __call__(self, done: int, total: int, tokens: int) -> None:
        now = time.perf_counter()
        if not self.tty and done < total:
            return  # logs (CI, pipes) get the final line only
        if done == self.last_done and (not self.tty or now - self.last_draw < 0.1):
            return
        self.last_done, self.last_draw = done, now
        filled = int(self.width * done / max(total, 1))
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = time.perf_counter() - self.start
        line = f"  {self.label:<22} [{bar}] {done}/{total} requests {tokens:6d} tokens {elapsed:6.1f}s"
        sys.stderr.write("\r" + line if self.tty else line + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


def make_config(args):
    from fastspec.runtime.config import ConfigError

    if args.tree and args.method is None and args.config is None:
        args.method = "mtp"  # trees come from a draft head
    if args.tree and args.method is not None and args.method not in TREE_METHODS:
        raise UserError(f"--tree needs a tree drafter: --method {', '.join(TREE_METHODS)}, got --method {args.method}")
    if args.config is None:
        args.config = str(METHOD_CONFIGS.get(args.method, DEFAULT_CONFIG))
    config = load_config(args.config)
    changes = {"verify_strategy": args.strategy}
    if args.method is not None:
        changes["method"] = args.method
    if changes.get("method", config.method) in ("none", "naive"):
        changes["num_speculative_tokens"] = 0
    elif args.k is not None:
        changes["num_speculative_tokens"] = args.k
    elif not config.speculative:
        changes["num_speculative_tokens"] = 5
    if args.tree:
        changes["num_model_steps"] = 0  # the chain drafts every depth from the head too, as a tree does
        if (
            changes.get("method", config.method) == "suffix"
        ):  # a tree is the cache's alone: so is the chain it is set against
            changes["suffix"] = {"with_anchored_ngram": False}
    sampling = {"seed": args.seed}
    if args.temperature is not None:
        sampling["temperature"] = args.temperature
    if args.top_p is not None:
        sampling["top_p"] = args.top_p
    for name in ("repetition_penalty", "presence_penalty", "frequency_penalty", "min_p", "logprobs"):
        if getattr(args, name) is not None:
            sampling[name] = getattr(args, name)
    changes["sampling"] = sampling
    try:
        return config.replace(**changes)
    except ConfigError as error:  # a combination the flags asked for
        raise UserError(f"{args.config} with the command-line options: {error}") from error


def with_draft_head(config, model, workload, args):
    """Methods mtp / eagle3: the target also returns hidden states (eagle3: its aux states
    through ``AuxHiddenStatesMixin``) and a draft head reads them. Returns (target, head or None)."""
    from fastspec.demo import draft_models as dm
    from fastspec.runtime.proposers import Eagle3DraftHead

    vocab, end = workload.tokenizer.vocab_size, workload.tokenizer.END
    if config.method == "mtp":
        if args.model == "replay":
            return dm.ReplayHiddenStates(model), dm.ReplayDraftHead(workload.references, vocab, end_token=end, peak=0.9)
        return dm.GridHiddenStates(model), dm.TinyDraftHead(vocab, 64, seed=args.seed + 1)
    if config.method == "eagle3":
        if args.model == "replay":
            target = dm.ReplayAuxHiddenStates(model, config.aux_layer_ids or "default", num_layers=EAGLE3_DEMO_LAYERS)
            return target, dm.ReplayEagle3Head(
                workload.references, vocab, target.aux_layer_ids, end_token=end, peak=0.9
            )
        target = dm.GridAuxHiddenStates(model, config.aux_layer_ids or "default")
        return target, Eagle3DraftHead(
            vocab, model.tok.weight.shape[1], num_aux=len(target.aux_layer_ids), seed=args.seed + 1
        )
    return model, None


def with_tree(config, args):
    """``config`` drafting trees as the --tree flags say (a combination the tree step refuses is a user error)."""
    from fastspec.runtime.config import ConfigError

    try:
        return config.replace(tree={"enabled": True, "top_k": args.tree_top_k, "max_nodes": args.tree_nodes})
    except ConfigError as error:
        raise UserError(f"--tree with {args.config} and the command-line options: {error}") from error


def run_one(
    label, model, workload, config, args, max_model_len, warmup=False, draft_model=None, step_mode=None, cost_model=None
):
    from fastspec.runtime.generation import default_params, generate

    count = 1 if warmup else len(workload.prompts)
    params = [
        dataclasses.replace(p, max_dec_len=4 if warmup else len(workload.references[i]) + 8)
        for i, p in enumerate(default_params(config, count))
    ]
    bar = None if warmup else ProgressBar(label)
    result = generate(
        model,
        workload.prompts[:count],
        config,
        max_num_seqs=args.batch_size,
        max_model_len=max_model_len,
        end_tokens=[workload.tokenizer.END],
        place=args.device,
        params=params,
        progress=bar,
        draft_model=draft_model,
        step_mode=step_mode,
        cost_model=cost_model,
    )
    if bar is not None:
        bar.close()
    return result


def median_run(results):
    """The run of median wall time (the lower middle of an even count)."""
    return sorted(results, key=lambda r: r.stats.wall_time)[(len(results) - 1) // 2]


def repeats_agree(results) -> bool:
    """Repeated runs of one config emit the same tokens (the seeds fix every draw)."""
    first = results[0].outputs
    return all(len(r.outputs) == len(first) and all(map(np.array_equal, r.outputs, first)) for r in results[1:])


def lossless_check(off, on, strategy):
    equal = sum(int(np.array_equal(a, b)) for a, b in zip(off.outputs, on.outputs))
    tokens = sum(len(a) for a in off.outputs)
    same = sum(
        int(np.sum(a[: min(len(a), len(b))] == b[: min(len(a), len(b))])) for a, b in zip(off.outputs, on.outputs)
    )
    if strategy in ("greedy", "target_match"):
        same_logprobs = on.logprobs == off.logprobs  # every request's, or every request's None
        verdict = "PASS" if equal == len(off.outputs) and same_logprobs else "FAIL"
        asked = any(lp is not None for lp in off.logprobs)
        also = (" and their logprobs" if same_logprobs else ", logprobs DIFFER") if asked else ""
        return verdict, f"{verdict}: {equal}/{len(off.outputs)} outputs identical to spec off{also}"
    return "n/a", (
        f"n/a for {strategy} (lossless in distribution, not token for token): {same}/{tokens} tokens equal to spec off"
    )


def logprobs_preview(result, tokenizer, tokens: int = 4) -> str:
    """The first request's first few tokens with their log-probabilities and their rows' most likely."""
    word = lambda t: tokenizer.words[t] if 0 <= t < len(tokenizer.words) else str(t)  # noqa: E731
    lines = ["logprobs of request 0 (token: logprob | most likely first):"]
    for token, (logprob, best) in zip(result.outputs[0][:tokens], result.logprobs[0][:tokens]):
        listed = ", ".join(f"{word(t)!r} {p:.3f}" for t, p in best[:3]) + (" ..." if len(best) > 3 else "")
        lines.append(f"  {word(int(token))!r}: {logprob:.3f} | {listed or '-'}")
    return "\n".join(lines)


def table(off, on, check_text) -> str:
    so, sn = off.stats, on.stats
    ms = lambda s: 1000.0 * s.wall_time / max(s.generated_tokens, 1)  # noqa: E731
    per_pos = " ".join(f"{a:.2f}" for a in sn.acceptance_per_position) or "-"
    saved = so.steps - sn.steps
    rows = [
        ("generated tokens", f"{so.generated_tokens}", f"{sn.generated_tokens}"),
        ("steps (model forwards)", f"{so.steps}", f"{sn.steps}"),
        ("steps saved", "-", f"{saved} ({100.0 * saved / max(so.steps, 1):.0f}%)"),
        ("request-steps saved", "-", f"{sn.steps_saved}"),
        ("mean accepted length", f"{so.mean_accepted_length:.2f}", f"{sn.mean_accepted_length:.2f}"),
        ("draft acceptance rate", "-", f"{sn.draft_acceptance_rate:.2f}"),
        ("acceptance by position", "-", per_pos),
        ("wall time", f"{so.wall_time:.2f} s", f"{sn.wall_time:.2f} s"),
        ("wall time per token", f"{ms(so):.2f} ms", f"{ms(sn):.2f} ms"),
        ("speed-up (wall time)", "-", f"{so.wall_time / max(sn.wall_time, 1e-9):.2f}x"),
    ]
    for stage in so.stage_time:
        rows.append((f"  time in {stage}", f"{so.stage_time[stage]:.2f} s", f"{sn.stage_time[stage]:.2f} s"))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows + [("", "spec off", "")])
    lines = [f"{'':<{w0}}  {'spec off':>{w1}}  spec on", "-" * (w0 + w1 + 30)]
    lines += [f"{a:<{w0}}  {b:>{w1}}  {c}" for a, b, c in rows]
    lines.append(f"{'lossless check':<{w0}}  {check_text}")
    return "\n".join(lines)


def draft_coverage(stats) -> float:
    """Fraction of decode request-steps that carried at least one draft."""
    proposed = stats.proposed_per_position[0] if stats.proposed_per_position else 0
    return proposed / stats.decode_request_steps if stats.decode_request_steps else 0.0


def plot(path: Path, main, sweep, k) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    positions = np.arange(1, k + 1)
    left.bar(positions, main.stats.acceptance_per_position, color="tab:blue")
    left.set(
        xlabel="draft position",
        ylabel="acceptance rate",
        ylim=(0, 1),
        title=f"acceptance by position (mean accepted length {main.stats.mean_accepted_length:.2f})",
    )
    left.set_xticks(positions)
    for n, result in sweep.items():
        right.plot(
            positions,
            result.stats.acceptance_per_position,
            marker="o",
            label=f"n = {n}: accepted length {result.stats.mean_accepted_length:.2f}, "
            f"drafts in {100 * draft_coverage(result.stats):.0f}% of steps",
        )
    right.set(xlabel="draft position", ylabel="acceptance rate", ylim=(0, 1), title="by n-gram size (min = max = n)")
    right.set_xticks(positions)
    if sweep:
        right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


@user_errors(PROG)
def main(argv=None) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    import paddle

    try:
        paddle.set_device(args.device)
    except (ValueError, RuntimeError) as e:
        raise UserError(f"--device {args.device}: not available in this Paddle build ({e})") from None
    from fastspec.demo.models import ReplayModel, TinyTransformer

    config = make_config(args)
    if args.structured_output:
        from fastspec.demo.structured import run as run_structured

        return run_structured(args, config)
    requests = args.requests or (2 if args.short else 16)
    chunk = args.chunk_tokens or (60 if args.short else 320)
    sizes = args.ngram_sizes or ([1, 3] if args.short else [1, 2, 3, 4])
    if args.corpus is None:
        args.corpus = "builtin" if args.short else "repo"
    workload = copy_edit_workload(requests, chunk, seed=args.seed, corpus=args.corpus)
    max_model_len = max(len(p) for p in workload.prompts) + max(len(r) for r in workload.references.values()) + 8
    vocab = workload.tokenizer.vocab_size
    if args.model == "replay":
        model = ReplayModel(
            workload.references, vocab, end_token=workload.tokenizer.END, peak=args.peak, seed=args.seed
        )
    else:
        layers = EAGLE3_DEMO_LAYERS if config.method == "eagle3" else 2
        model = TinyTransformer(vocab, max_model_len, n_layers=layers, seed=args.seed)
    model, draft_model = with_draft_head(config, model, workload, args)
    print(
        f"fastspec demo: {requests} requests of ~{chunk} file tokens from the {args.corpus} corpus (vocab {vocab}), "
        f"batch {args.batch_size}, device {args.device}, model {args.model}"
    )
    print(
        f"  config: method {config.method}, K {config.num_speculative_tokens}, strategy {config.verify_strategy}, "
        f"n-gram {config.min_ngram_size}..{config.max_ngram_size}, temperature {config.sampling.temperature}, "
        f"top_p {config.sampling.top_p}"
        + (
            f", model steps {config.num_model_steps or config.num_speculative_tokens}, chained {config.chain_hidden_states}"
            if config.method in ("mtp", "eagle3")
            else ""
        )
        + (f", aux layers {list(model.aux_layer_ids)}" if config.method == "eagle3" else "")
    )

    if args.stream:
        from fastspec.demo.stream import stream

        verdict, streamed = stream(model, workload, config, args, max_model_len, draft_model=draft_model)
        out = Path(args.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(f"--out {out}: cannot create the folder: {error.strerror or error}") from error
        (out / "summary.json").write_text(
            json.dumps(
                {"args": vars(args), "config": config.to_dict(), "stream": streamed, "lossless": verdict},
                indent=2,
                default=str,
            )
        )
        print(f"wrote {out / 'summary.json'}")
        return 0 if verdict != "FAIL" else 1
    spec_off = config.replace(method="none", num_speculative_tokens=0)
    step_mode = "static" if args.static_step else None

    def run(label: str, run_config, **options):  # every run: the same model, workload and lengths
        return run_one(label, model, workload, run_config, args, max_model_len, **options)

    def warm_then_run(label: str, run_config, **options):  # a warm-up first, as for spec on
        run("warm-up", run_config, warmup=True, draft_model=draft_model)
        return run(label, run_config, draft_model=draft_model, step_mode=step_mode, **options)

    for warm in (spec_off, config):  # first calls pay one-time costs; keep them out of the timings
        run("warm-up", warm, warmup=True, draft_model=draft_model)
    repeats = args.repeats or (1 if args.short else 3)
    offs, ons = [], []
    for i in range(repeats):  # alternated, so a busy moment of the machine falls on either
        round_ = f" ({i + 1}/{repeats})" if repeats > 1 else ""
        offs.append(run(f"spec off{round_}", spec_off))
        ons.append(run(f"spec on ({config.method}){round_}", config, draft_model=draft_model, step_mode=step_mode))
    off, on = median_run(offs), median_run(ons)
    verdict, check_text = lossless_check(off, on, config.verify_strategy)
    if not all(repeats_agree(runs) for runs in (offs, ons)):
        verdict, check_text = "FAIL", f"{check_text}; FAIL: the repeated runs' outputs differ"
    sweep = {}
    if config.method == "ngram":  # the sweep is about n-gram drafts
        for n in sizes:
            sweep[n] = run(f"n-gram size {n}", config.replace(max_ngram_size=n, min_ngram_size=n))

    tree = None
    if args.tree:  # the same head drafting top-k trees, beside its chain
        from fastspec.demo.columns import side_by_side

        tree = warm_then_run("spec on (tree)", with_tree(config, args))
        tree_verdict, tree_check = lossless_check(off, tree, config.verify_strategy)
        verdict = "FAIL" if "FAIL" in (verdict, tree_verdict) else verdict

    adaptive = None
    if config.speculative and not args.no_adaptive and not args.tree:  # the draft-length controller beside fixed K
        from fastspec.demo.adaptive_view import adaptive_config, comparison_table, measured_cost

        cost = measured_cost(config)  # None: the roofline the config names
        adaptive = warm_then_run("adaptive", adaptive_config(config), cost_model=cost)
        adaptive_verdict, adaptive_check = lossless_check(off, adaptive, config.verify_strategy)
        verdict = "FAIL" if "FAIL" in (verdict, adaptive_verdict) else verdict

    print()
    if step_mode:
        print(
            f"static step: {on.stats.steps} steps replayed programs built {on.stats.program_builds} "
            "(the build time is inside the spec-on wall time)"
        )
    print(table(off, on, check_text))
    if on.logprobs and on.logprobs[0] is not None:
        print(logprobs_preview(on, workload.tokenizer))
    if tree is not None:
        print()
        print(
            side_by_side(
                (
                    "spec off",
                    f"chain (K = {config.num_speculative_tokens})",
                    f"tree (top-{args.tree_top_k}, {args.tree_nodes} nodes)",
                ),
                (off, on, tree),
                [("lossless check", f"chain: {check_text}"), ("", f"tree: {tree_check}")],
            )
        )
    if adaptive is not None:
        print()
        print(comparison_table(off, on, adaptive, config.num_speculative_tokens, adaptive_check, cost))
    if sweep:
        print(
            "by n-gram size (min = max = n): "
            + ", ".join(
                f"n={n}: accepted length {r.stats.mean_accepted_length:.2f}, drafts in "
                f"{100 * draft_coverage(r.stats):.0f}% of steps"
                for n, r in sweep.items()
            )
        )
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"--out {out}: cannot create the folder: {error.strerror or error}") from error
    summary = {
        "args": vars(args),
        "config": config.to_dict(),
        "workload": {
            "requests": requests,
            "chunk_tokens": chunk,
            "corpus": args.corpus,
            "vocab_size": vocab,
            "sources": workload.sources,
        },
        "spec_off": off.stats.summary(),
        "spec_on": on.stats.summary(),
        "steps_saved": off.stats.steps - on.stats.steps,
        "wall_times_s": {"spec_off": [r.stats.wall_time for r in offs], "spec_on": [r.stats.wall_time for r in ons]},
        "lossless": verdict,
        "by_ngram_size": {n: r.stats.summary() for n, r in sweep.items()},
        "adaptive": adaptive.stats.summary() if adaptive is not None else None,
        "tree": tree.stats.summary() if tree is not None else None,
        "total_time_s": time.perf_counter() - t0,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    if config.speculative and not args.no_plot:
        plot(out / "acceptance.png", on, sweep, config.num_speculative_tokens)
        print(f"wrote {out / 'summary.json'} and {out / 'acceptance.png'}")
    else:
        print(f"wrote {out / 'summary.json'}")
    print(f"total time {time.perf_counter() - t0:.1f} s")
    return 0 if verdict != "FAIL" else 1


if __name__ == "__main__":
    sys.exit(main())
