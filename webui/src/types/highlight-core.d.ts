// highlight.js types its full build ("highlight.js") and its language modules, not its core
// ("highlight.js/lib/core"), which has the same API with no language registered.
declare module "highlight.js/lib/core" {
  import type { HLJSApi } from "highlight.js";

  const hljs: HLJSApi;
  export default hljs;
}
