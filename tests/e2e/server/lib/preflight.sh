# Sourced by tests/e2e/server/run.sh and scripts/soak.sh: checks that node (>= 20), the suites' npm
# packages and the programs in $bin are there, naming what is missing. Needs $bin (the directory of
# llaisys-server, llaisys-mkmodel, llaisys-offline), $e2e (tests/e2e/server) and $who (message prefix).
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "$who: node >= 20 is needed, found $(node --version)" >&2
  exit 1
fi
for package in openai eventsource-parser ajv yaml; do
  if [ ! -d "$e2e/node_modules/$package" ]; then
    echo "$who: the npm package $package is missing; run scripts/install-deps.sh" >&2
    exit 1
  fi
done
for program in llaisys-server llaisys-mkmodel llaisys-offline; do
  if [ ! -x "$bin/$program" ]; then
    echo "$who: $bin/$program is not built" >&2
    exit 1
  fi
done
