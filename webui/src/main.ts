// Entry point of the bundle (dist/app.js), loaded by index.html.
import { ChatApp } from "./app";

const mount = document.getElementById("app");
if (mount !== null) new ChatApp(mount);
