"""foldbench's driver of mini-swe-agent: one user turn per process, continuing one session.

mini-swe-agent has no way to continue a conversation from one process to the next: `mini`
always starts afresh. This driver runs one turn with mini-swe-agent's own classes and its own
text-based configuration (`mini_textbased.yaml`: the model answers with one fenced
`mswea_bash_command` block, the observation comes back as a user message), in its own local
environment (commands run with `subprocess` in the working folder). The first turn starts the
conversation as `mini` does (the system template, the task in its instance template); a later
turn loads the trajectory file the previous turn wrote and adds the user's words the way
mini-swe-agent's interactive agent adds a new task after a finish ("The user added a new task:
..."). The turn ends when the agent submits (`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`).

The last line of standard output is one JSON object: the closing message (the text of the
agent's last answer before its command block) and mini-swe-agent's exit status.
"""

import argparse
import json
import pathlib
import re

from minisweagent.agents.default import DefaultAgent
from minisweagent.config import get_config_from_spec
from minisweagent.environments.local import LocalEnvironment
from minisweagent.exceptions import FormatError, InterruptAgentFlow
from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trajectory", required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--step-limit", type=int, default=0)
    ap.add_argument("--task", required=True)
    a = ap.parse_args()

    config = get_config_from_spec("mini_textbased.yaml")
    model_cfg = dict(config.get("model", {}))
    model_cfg["model_name"] = a.model
    model_cfg["model_kwargs"] = {**model_cfg.get("model_kwargs", {}), "api_base": a.base_url}
    model_cfg["cost_tracking"] = "ignore_errors"
    model = LitellmTextbasedModel(**model_cfg)
    env = LocalEnvironment(**config.get("environment", {}))
    agent_cfg = dict(config.get("agent", {}))
    # The interactive agent's own settings (confirmation mode, exit prompt) have no meaning here:
    # nobody answers a prompt.
    for key in ("mode", "whitelist_actions", "confirm_exit", "agent_class"):
        agent_cfg.pop(key, None)
    agent_cfg["step_limit"] = a.step_limit
    agent_cfg["cost_limit"] = 0
    path = pathlib.Path(a.trajectory)
    agent_cfg["output_path"] = path
    agent = DefaultAgent(model, env, **agent_cfg)

    if not path.exists():
        agent.run(a.task)
    else:
        messages = json.loads(path.read_text())["messages"]
        while messages and messages[-1].get("role") == "exit":
            messages.pop()
        agent.messages = messages
        agent.extra_template_vars |= {"task": a.task}
        agent.add_messages(
            model.format_message(role="user", content=f"The user added a new task: {a.task}")
        )
        # DefaultAgent.run's loop, without its reset of the conversation.
        while True:
            try:
                agent.step()
            except FormatError as e:
                agent.add_messages(*e.messages)
            except InterruptAgentFlow as e:
                agent.add_messages(*e.messages)
            finally:
                agent.save(agent.config.output_path)
            if agent.messages[-1].get("role") == "exit":
                break

    last = agent.messages[-1] if agent.messages else {}
    answer = next(
        (m.get("content") or "" for m in reversed(agent.messages) if m.get("role") == "assistant"),
        "",
    )
    closing = re.split(r"```mswea_bash_command", answer, maxsplit=1)[0].strip()
    status = last.get("extra", {}).get("exit_status", "")
    print(json.dumps({"closing": closing, "exit_status": status}))


if __name__ == "__main__":
    main()
