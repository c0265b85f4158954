#!/usr/bin/env node
// The registry CLI as an installed command: TypeScript runs through tsx, registered here.
import { register } from "tsx/esm/api"

register()
await import(new URL("../src/Cli/main.ts", import.meta.url).href)
