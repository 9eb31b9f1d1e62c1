// Completes package-lock.json after `npm install`, so that `npm ci` accepts it.
//
// opencode-ai declares one native package per platform as optionalDependencies. The
// registry this project reaches serves only some of them (opencode-darwin-arm64, for
// one, is not there at all); npm tolerates the missing optional packages on install but
// leaves them out of the lock, and `npm ci` then refuses the lock as out of sync with
// package.json. This adds an entry for each missing one, with the os/cpu/libc its name
// states and no tarball: npm skips a package whose platform does not match before
// fetching it, and these are exactly the ones that do not match the Linux x64 machines
// this project runs on.
//
// Usage: cd workspace && npm install --save-exact <pkg>@<version> && node complete-lock.mjs
import { readFileSync, writeFileSync } from "node:fs";

const file = new URL("./package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(file, "utf8"));
const packages = lock.packages;
const OS = { darwin: "darwin", linux: "linux", windows: "win32" };
let added = 0;
for (const [key, pkg] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const entry = `node_modules/${name}`;
    if (packages[entry]) continue;
    const m = /^opencode-(darwin|linux|windows)-(x64|arm64)(-baseline)?(-musl)?$/.exec(name);
    if (!m) {
      throw new Error(`${key}: optional dependency ${name} is missing from the lock and its platform is unknown`);
    }
    packages[entry] = {
      version,
      cpu: [m[2]],
      ...(m[4] ? { libc: ["musl"] } : {}),
      license: pkg.license,
      optional: true,
      os: [OS[m[1]]],
    };
    added += 1;
  }
}
const sorted = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)),
);
lock.packages = sorted;
writeFileSync(file, JSON.stringify(lock, null, 2) + "\n");
console.log(`complete-lock: added ${added} platform entries`);
