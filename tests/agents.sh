#!/usr/bin/env bash
# The real coding agents `foldbench run --agent` drives, installed from their registries at pinned
# versions into one cache folder (docs/agents.md).
#
#   tests/agents.sh [install]   install the agents that are missing, print their settings
#   tests/agents.sh status      print the settings of the installed ones; exit 1 if one is missing
#
# Agents (FOLDBENCH_AGENTS, comma-separated; default all three):
#   claude-code     npm @anthropic-ai/claude-code (its platform package carries the native binary)
#   codex           npm @openai/codex (likewise: @openai/codex-linux-x64 carries the binary)
#   mini-swe-agent  PyPI mini-swe-agent, in a venv of its own
#
# Where (FOLDBENCH_AGENTS_DIR, default /opt/foldbench-agents): npm/ holds the two npm packages
# (`npm install --prefix`), mini/ the venv. A second run with the same versions installs nothing
# (about 0.1 s); a changed pin reinstalls that agent only. The npm packages take ~800 MB (the
# Claude Code binary alone is 400 MB), the venv ~750 MB (mini-swe-agent brings litellm).
#
# On success stdout holds only KEY=VALUE lines (progress goes to stderr):
#   FOLDBENCH_CLAUDE_CODE=/opt/foldbench-agents/npm/node_modules/.bin/claude
#   FOLDBENCH_CODEX=/opt/foldbench-agents/npm/node_modules/.bin/codex
#   FOLDBENCH_MINI_SWE_AGENT=/opt/foldbench-agents/mini/bin/python
# so a caller can `export $(tests/agents.sh)`; `foldbench run --agent NAME` reads them.
set -euo pipefail

CLAUDE_CODE_VERSION=2.1.332
CODEX_VERSION=0.171.0
MINI_SWE_AGENT_VERSION=2.4.6

DIR="${FOLDBENCH_AGENTS_DIR:-/opt/foldbench-agents}"
AGENTS="${FOLDBENCH_AGENTS:-claude-code,codex,mini-swe-agent}"
PYTHON="${PYTHON:-python3}"
NPM_DIR="$DIR/npm"
VENV="$DIR/mini"
CMD="${1:-install}"

say() { echo "agents.sh: $*" >&2; }

claude_bin() { echo "$NPM_DIR/node_modules/.bin/claude"; }
codex_bin() { echo "$NPM_DIR/node_modules/.bin/codex"; }
mini_python() { echo "$VENV/bin/python"; }

# The version an installed agent reports, or nothing.
installed_version() {
  case "$1" in
    claude-code) [ -x "$(claude_bin)" ] && "$(claude_bin)" --version 2>/dev/null | awk '{print $1}' ;;
    codex) [ -x "$(codex_bin)" ] && "$(codex_bin)" --version 2>/dev/null | awk '{print $2}' ;;
    mini-swe-agent) [ -x "$(mini_python)" ] \
      && "$(mini_python)" -c 'import importlib.metadata as m; print(m.version("mini-swe-agent"))' 2>/dev/null ;;
  esac
  return 0
}

pinned() {
  case "$1" in
    claude-code) echo "$CLAUDE_CODE_VERSION" ;;
    codex) echo "$CODEX_VERSION" ;;
    mini-swe-agent) echo "$MINI_SWE_AGENT_VERSION" ;;
    *) say "unknown agent '$1' in FOLDBENCH_AGENTS (known: claude-code, codex, mini-swe-agent)"; exit 2 ;;
  esac
}

install_one() {
  local agent="$1" want
  want="$(pinned "$agent")"
  if [ "$(installed_version "$agent")" = "$want" ]; then
    return 0
  fi
  case "$agent" in
    claude-code|codex)
      command -v npm >/dev/null || { say "npm is required to install $agent"; exit 1; }
      local pkg="@anthropic-ai/claude-code"
      [ "$agent" = codex ] && pkg="@openai/codex"
      say "installing $pkg@$want into $NPM_DIR"
      mkdir -p "$NPM_DIR"
      # The platform binaries come as optional dependencies; Claude Code's postinstall only copies
      # the binary over its placeholder, which npm's hard link already did.
      npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error "$pkg@$want" >&2
      ;;
    mini-swe-agent)
      say "installing mini-swe-agent==$want into $VENV"
      if ! [ -x "$(mini_python)" ]; then
        "$PYTHON" -m venv "$VENV"
      fi
      "$VENV/bin/pip" install --quiet --disable-pip-version-check "mini-swe-agent==$want" >&2
      ;;
  esac
  local got
  got="$(installed_version "$agent")"
  if [ "$got" != "$want" ]; then
    say "$agent: installed, but it reports version '${got:-none}', not $want"
    exit 1
  fi
}

settings() {
  local agent="$1" key path
  case "$agent" in
    claude-code) key=FOLDBENCH_CLAUDE_CODE; path="$(claude_bin)" ;;
    codex) key=FOLDBENCH_CODEX; path="$(codex_bin)" ;;
    mini-swe-agent) key=FOLDBENCH_MINI_SWE_AGENT; path="$(mini_python)" ;;
  esac
  echo "$key=$path"
}

IFS=',' read -r -a LIST <<<"$AGENTS"
case "$CMD" in
  install)
    for a in "${LIST[@]}"; do install_one "$a"; done
    for a in "${LIST[@]}"; do settings "$a"; done
    ;;
  status)
    missing=0
    for a in "${LIST[@]}"; do
      want="$(pinned "$a")"
      got="$(installed_version "$a")"
      if [ "$got" = "$want" ]; then
        settings "$a"
      else
        say "$a $want is not installed in $DIR (found: ${got:-nothing}); run tests/agents.sh install"
        missing=1
      fi
    done
    exit "$missing"
    ;;
  *)
    say "usage: tests/agents.sh [install|status]"
    exit 2
    ;;
esac
