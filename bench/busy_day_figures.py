"""bench/busy_day.py's settings, its steps' figures, and how they are printed and
plotted: a markdown table row per step, the summary, the PNG of latency against R."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import benchlib
from busy_day_load import Pace

OPERATIONS = ["claim", "decide", "renew", "note", "release", "dashboard", "enqueue"]


@dataclass(frozen=True)
class Config:
    server: str
    start: int
    step: int
    most: int
    idle: int
    idle_tokens: int
    managers: int
    pace: Pace
    decisions_per_step: float
    warmup: float
    backlog: int
    workers: int
    latency_limit_ms: float
    lag_limit: float
    png: str | None
    seed: int
    keep_going: bool = False

    @property
    def measure_seconds(self) -> float:
        return self.decisions_per_step * self.pace.mean_think

    def decisions_per_second(self, reviewers: int) -> float:
        return reviewers * (1 - self.pace.release_share) / self.pace.mean_think


@dataclass
class Step:
    reviewers: int
    seconds: float = 0.0
    decisions: int = 0
    samples: dict[str, list[float]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    delivery: list[float] = field(default_factory=list)
    cores: dict[str, float] = field(default_factory=dict)
    load: float = 0.0
    replaced: int = 0
    why_not: str = ""

    def ms(self, operation: str, fraction: float) -> float:
        values = sorted(self.samples.get(operation, []))
        return 1000 * benchlib.percentile(values, fraction)

    def cell(self, operation: str) -> str:
        if not self.samples.get(operation):
            return "-"
        return f"{self.ms(operation, 0.5):.0f} / {self.ms(operation, 0.99):.0f}"


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


# --- the steps -----------------------------------------------------------------------------


HEADERS = [
    "R",
    "R x scale",
    "decisions/s",
    *(f"{operation} p50 / p99 ms" for operation in OPERATIONS),
    "decision stream p50 / p99 ms",
    "delivery lag p50 / p99 / max ms",
    "serving processes' cores",
    "supervisor cores",
    "serving processes' run-queue wait s/s",
    "postgres cores",
    "bench cores",
    "idle consoles cores",
    "receiver cores",
    "machine",
    "load",
    "held",
]


def row(step: Step, serving: list[str], scale: float) -> list[str]:
    delivery = sorted(step.delivery)
    lag = (
        " / ".join(
            f"{1000 * value:.0f}"
            for value in (
                benchlib.percentile(delivery, 0.5),
                benchlib.percentile(delivery, 0.99),
                delivery[-1],
            )
        )
        if delivery
        else "-"
    )
    return [
        str(step.reviewers),
        f"{step.reviewers * scale:g}",
        f"{step.decisions / step.seconds:.1f}",
        *(step.cell(operation) for operation in OPERATIONS),
        step.cell("decision stream"),
        lag,
        " + ".join(f"{step.cores[name]:.2f}" for name in serving if name.startswith("serving")),
        f"{sum(step.cores[name] for name in serving if not name.startswith('serving')):.2f}",
        " + ".join(
            f"{step.cores[f'wait {name}']:.2f}" for name in serving if name.startswith("serving")
        ),
        f"{step.cores['postgres']:.2f}",
        f"{step.cores['bench']:.2f}",
        f"{step.cores['idle']:.2f}",
        f"{step.cores['receiver']:.2f}",
        f"{step.cores['machine']:.2f}",
        f"{step.load:.1f}",
        "yes" if not step.why_not else f"no: {step.why_not}",
    ]


def judge(config: Config, step: Step) -> str:
    reasons = [
        f"{operation} p99 {step.ms(operation, 0.99):.0f} ms"
        for operation in ("claim", "decide")
        if step.ms(operation, 0.99) > config.latency_limit_ms
    ]
    if step.delivery and max(step.delivery) > config.lag_limit:
        reasons.append(f"a delivery lagged {max(step.delivery):.1f} s")
    if step.replaced:
        reasons.append(f"{step.replaced} serving process(es) replaced")
    if not step.samples.get("claim") or not step.samples.get("decide"):
        reasons.append("no claims or decisions measured")
    return "; ".join(reasons)


# --- the report ----------------------------------------------------------------------------


def report(config: Config, steps: list[Step], serving: list[str]) -> None:
    failed = next((n for n, step in enumerate(steps) if step.why_not), len(steps))
    held = steps[:failed]
    print()
    benchlib.print_table(
        HEADERS,
        [row(step, serving, config.pace.scale) for step in steps],
        title=f"time scale {config.pace.scale:g} (think times {config.pace.think_low:g}-"
        f"{config.pace.think_high:g} s / {config.pace.scale:g}; managers every "
        f"{config.pace.manager_interval:g} s); {config.idle} idle "
        f"consoles, {config.managers} managers; cores: CPU seconds over the window's seconds "
        "(supervisor: serve's parent and its resource tracker)",
    )
    largest = held[-1].reviewers if held else 0
    print(
        f"\nlargest R that held: {largest} reviewers at time scale {config.pace.scale:g}, "
        f"R x scale = {largest * config.pace.scale:g} reviewers' requests at a human pace ("
        f"{held[-1].decisions / held[-1].seconds if held else 0:.1f} decisions/s)"
    )
    last = steps[min(failed, len(steps) - 1)] if steps else None
    if last is not None:
        busiest = sorted(
            (
                (name, value)
                for name, value in last.cores.items()
                if name not in ("machine", "steal") and not name.startswith("wait")
            ),
            key=lambda pair: -pair[1],
        )
        print(
            f"at R = {last.reviewers}: {last.why_not or 'held'}; busiest: "
            + ", ".join(f"{name} {value:.2f}" for name, value in busiest[:4])
            + "; serving processes waited "
            + " + ".join(
                f"{value:.2f}"
                for name, value in last.cores.items()
                if name.startswith("wait serving")
            )
            + " s/s for a core"
            + f"; machine {last.cores['machine']:.2f} of {os.cpu_count()} cores busy, "
            f"steal {last.cores['steal']:.2f}"
        )


def write_png(config: Config, steps: list[Step], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.5, 4.5))
    sizes = [step.reviewers for step in steps]
    for operation, colour in (("claim", "tab:blue"), ("decide", "tab:green")):
        for fraction, style in ((0.99, "o-"), (0.5, "o--")):
            axes.plot(
                sizes,
                [step.ms(operation, fraction) for step in steps],
                style,
                color=colour,
                label=f"{operation} p{round(100 * fraction)}",
            )
    for fraction, style in ((0.99, "s-"), (0.5, "s--")):
        axes.plot(
            sizes,
            [1000 * benchlib.percentile(sorted(s.delivery), fraction) for s in steps],
            style,
            color="tab:red",
            label=f"delivery lag p{round(100 * fraction)}",
        )
    axes.axhline(config.latency_limit_ms, color="grey", linestyle=":", label="claim/decide limit")
    axes.axhline(1000 * config.lag_limit, color="tab:red", linestyle=":", label="lag limit")
    axes.set_yscale("log")
    axes.set_xlabel(
        f"reviewers R at time scale {config.pace.scale:g} (x {config.pace.scale:g}: "
        "reviewers at a human pace)"
    )
    axes.set_ylabel("ms")
    loads = [step.load for step in steps]
    axes.set_title(
        f"A busy day: serve --workers 2, {config.idle} idle consoles, {config.managers} "
        f"managers\n2 shared cores, load average {min(loads):.1f} to {max(loads):.1f}",
        fontsize=10,
    )
    axes.legend(fontsize=7, ncol=2)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
