# Sourced by the scripts that time kernels: sets the array `bin` to the sparsetune to run.
# $SPARSETUNE_BIN when set; else the checkout's build, built once here. Not scripts/sparsetune,
# which rebuilds when a source changed: a source edited during a run would then be rebuilt
# between two measurements (disturbing them), and a failed rebuild fail every later one.
if [ -n "${SPARSETUNE_BIN:-}" ]; then
  read -ra bin <<< "$SPARSETUNE_BIN"
else
  bash "$root/scripts/build.sh" sparsetune
  bin=("${SPARSETUNE_BUILD_DIR:-$root/build}/apps/sparsetune/sparsetune")
fi
