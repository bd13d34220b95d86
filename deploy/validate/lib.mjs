// Helpers shared by the deploy checks (validate.mjs, check-image.mjs): running tools, collecting
// findings, reading the binaries' flags. No third-party modules here, so check-image.mjs runs
// without `npm ci`.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (deploy/validate/../..). */
export const SOURCE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The binaries the manifests and the Dockerfile run, by image name, with their build paths. */
export const BINARIES = {
  'hb-grader': 'grader_service/hb-grader',
  'hb-orchestrator': 'orchestrator/hb-orchestrator',
  'hb-llm-sim': 'simulator/hb-llm-sim',
  'hb-env': 'environment/hb-env',
};

/**
 * Runs a program without a shell. Returns {status, stdout, stderr, error}; never throws.
 * `status` is null when the program could not be started (then `error` says why).
 */
export function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...options });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', error: r.error };
}

/** Collects findings of one check; `finish()` prints them and returns the exit code. */
export class Report {
  constructor(name) {
    this.name = name;
    this.errors = [];
    this.notes = [];
    this.passed = 0;
  }
  /** Records a failure unless `cond` holds. Returns `cond` so callers can stop early. */
  expect(cond, message) {
    if (cond) this.passed++;
    else this.errors.push(message);
    return Boolean(cond);
  }
  fail(message) { this.errors.push(message); }
  note(message) { this.notes.push(message); }
  finish() {
    for (const n of this.notes) console.log(`note: ${n}`);
    for (const e of this.errors) console.log(`FAIL: ${e}`);
    console.log(`${this.name}: ${this.passed} checks passed, ${this.errors.length} failed`);
    return this.errors.length ? 1 : 0;
  }
}

/** Lists files under `dir` (recursively) whose name ends with one of `suffixes`. */
export function listFiles(dir, suffixes) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...listFiles(p, suffixes));
    else if (suffixes.some((s) => name.endsWith(s))) out.push(p);
  }
  return out;
}

/** Parses "<stage> <package>" lines of scripts/deps.txt into {stage: [package...]}. */
export function readDeps(path = join(SOURCE_DIR, 'scripts', 'deps.txt')) {
  const stages = {};
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    if (fields.length !== 2) continue;
    (stages[fields[0]] ??= []).push(fields[1]);
  }
  return stages;
}

/** Where the built binaries are: $HB_BINARY_DIR, else an explicit --binaries, else null. */
export function binaryDir(explicit) {
  return explicit || process.env.HB_BINARY_DIR || null;
}

/**
 * The flags a binary accepts, from `BIN [SUBCOMMAND] --helpfull` (Abseil flags; bool flags
 * are listed as --[no]name). Names are returned with underscores: our binaries accept '-' and
 * '_' alike (Abseil itself only knows '_'). Returns {flags: Set, text} or {error}.
 */
export function helpFlags(binPath, subcommand) {
  if (!existsSync(binPath)) return { error: `${binPath} does not exist (build it first)` };
  const tries = subcommand ? [[subcommand, '--helpfull'], ['--helpfull']] : [['--helpfull']];
  for (const args of tries) {
    // --helpfull exits non-zero in Abseil; only the text matters.
    const r = run(binPath, args, { timeout: 20000 });
    if (r.status === null) return { error: `cannot run ${binPath}: ${r.error}` };
    const text = r.stdout + r.stderr;
    const flags = new Set();
    for (const m of text.matchAll(/^\s+--(\[no\])?([A-Za-z0-9_][A-Za-z0-9_-]*)\b/gm)) {
      flags.add(m[2].replace(/-/g, '_'));
    }
    if (flags.size) return { flags, text };
  }
  return { error: `${binPath} --helpfull listed no flags` };
}
