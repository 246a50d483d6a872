"""The lean cell's shape under inspect_ai 0.3.285 with its mockllm model, to compare harness
time per sample with foldbench's per-cell figure (docs/performance.md).

Each sample: user turn 1, the model reads two files with a real tool (two tool calls, then an
answer), user turn 2, two more reads and an answer, then an in-process scorer that looks for a
string in the answer. The files are the lean cell's fixture (../lean/fixture). The mock model's
outputs are scripted per call: tool call, tool call, answer, per turn.

Usage: python anchor.py N [--no-realtime]  — runs N samples one at a time (max_samples=1) and
prints the eval's wall and CPU time as JSON. run.sh times start-up and runs this for 1 and N
samples; the per-sample harness time is (t(N) - t(1)) / (N - 1).
"""

import json
import pathlib
import sys
import tempfile
import time

from inspect_ai import Task, eval as inspect_eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageUser, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver, use_tools
from inspect_ai.tool import tool

FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "lean" / "fixture"
TURNS = [
    ("what tax rate does billing use, and where are the shipping rates?",
     ["src/billing.py", "src/shipping.py"],
     "Billing uses TAX_RATE = 0.2; shipping rates are the rate_* functions."),
    ("what does the changelog say about billing, and what is item 7?",
     ["docs/CHANGELOG.md", "docs/README.md"],
     "The changelog lists billing fixes; item 7 is thing 7 at price 21."),
]


@tool
def read_file():
    async def execute(path: str) -> str:
        """Read a file of the repository.

        Args:
            path: The file's path, relative to the repository root.
        """
        return (FIXTURE / path).read_text()

    return execute


def with_usage(output):
    # A fixed usage: without one, mockllm counts tokens with tiktoken's o200k, which it downloads
    # on first use (this machine has no network). So inspect tokenizes nothing here, while
    # foldbench counts every message: the comparison leans in inspect's favour.
    output.usage = ModelUsage(input_tokens=1000, output_tokens=20, total_tokens=1020)
    return output


def outputs(n):
    """The mock model's answers for n samples run one at a time."""
    for _ in range(n):
        for _, paths, answer in TURNS:
            for p in paths:
                yield with_usage(
                    ModelOutput.for_tool_call("mockllm/model", "read_file", {"path": p})
                )
            yield with_usage(ModelOutput.from_content("mockllm/model", answer))


@solver
def two_turns():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        for i, (user, _, _) in enumerate(TURNS):
            if i > 0:
                state.messages.append(ChatMessageUser(content=user))
            state = await generate(state, tool_calls="loop")
        return state

    return solve


@scorer(metrics=[accuracy()])
def answer_contains():
    async def score(state: TaskState, target: Target) -> Score:
        ok = target.text in state.output.completion
        return Score(value=CORRECT if ok else INCORRECT)

    return score


@task
def lean(n: int = 1):
    return Task(
        dataset=[Sample(input=TURNS[0][0], target="thing 7", id=i) for i in range(n)],
        solver=[use_tools(read_file()), two_turns()],
        scorer=answer_contains(),
    )


def main():
    n = int(sys.argv[1])
    realtime = "--no-realtime" not in sys.argv
    model = get_model("mockllm/model", custom_outputs=outputs(n))
    with tempfile.TemporaryDirectory() as logs:
        t, cpu = time.perf_counter(), time.process_time()
        [log] = inspect_eval(
            lean(n),
            model=model,
            max_samples=1,
            log_dir=logs,
            log_realtime=realtime,
            display="none",
        )
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
        # Checked after the clock stopped (reading the log back is not harness time).
        samples = log.samples or []
        tools = sum(1 for s in samples for m in s.messages if m.role == "tool")
        correct = sum(1 for s in samples for v in (s.scores or {}).values() if v.value == CORRECT)
        assert log.status == "success", log.error.message if log.error else log.status
        assert len(samples) == n and tools == 4 * n and correct == n, (len(samples), tools, correct)
    print(json.dumps({"samples": n, "realtime_log": realtime, "eval_s": round(wall, 4),
                      "eval_cpu_s": round(cpu, 4)}))


if __name__ == "__main__":
    main()
