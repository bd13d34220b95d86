// Checks of the container build (deploy/docker/Dockerfile), which cannot be built here (no
// container engine). Run by ctest, label "deploy"; needs no npm modules.
//
//   node check-image.mjs dockerfile   the Dockerfile installs packages only through
//                                     install-deps.sh from scripts/deps.txt (stage build in the
//                                     builder, exactly stage runtime in the images), targets and
//                                     entrypoints match the binaries, template path and hash;
//                                     every runtime package exists in Debian (apt-cache show)
//   node check-image.mjs selftest     each of those rules rejects the mistake it is for
//   node check-image.mjs libs         every shared library the built binaries load
//                                     ($HB_BINARY_DIR) comes from a runtime package or its
//                                     dependencies, and every library they link directly from
//                                     a package listed as runtime (ldd, dpkg -S, apt-cache)
//
// Exit status: 0 when every check passed, 1 otherwise, 2 on bad usage.
import {
  copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BINARIES, Report, SOURCE_DIR, binaryDir, readDeps, run } from './lib.mjs';

const DOCKERFILE = join(SOURCE_DIR, 'deploy', 'docker', 'Dockerfile');
const INSTALL_DEPS = join(SOURCE_DIR, 'deploy', 'docker', 'install-deps.sh');
const DEPS = join(SOURCE_DIR, 'scripts', 'deps.txt');
const TEMPLATE_SHA256 = '2adffd51fd259554ebcd036ad1072d4aa2b7ce3aec2bbffe36271f911632ed3c';
const TEMPLATE_PATH = '/usr/share/healthbench/grader_template.txt';
/** In debian:12-slim already (apt needs them), so binaries may link them without a listing. */
const BASE_IMAGE_LIBS = new Set(['libc6', 'libstdc++6', 'libgcc-s1']);

/** `apt-cache ARGS`, memoised: each call reads the package lists for seconds. */
const aptCalls = new Map();
function aptCache(args) {
  const key = args.join(' ');
  if (!aptCalls.has(key)) aptCalls.set(key, run('apt-cache', args));
  return aptCalls.get(key);
}

/** Dockerfile -> [{stage, from, instructions: [{op, args, line}]}], ARG defaults in `args`. */
export function parseDockerfile(text) {
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  const stages = [];
  const globalArgs = {};
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = line.match(/^(\w+)\s+(.*)$/);
    if (!m) return;
    const op = m[1].toUpperCase();
    const args = m[2].replace(/\s+/g, ' ');
    if (op === 'FROM') {
      const f = args.match(/^(?:--\S+ )*(\S+)(?: AS (\S+))?$/i);
      stages.push({ from: f?.[1], stage: f?.[2] ?? null, instructions: [] });
    } else if (op === 'ARG' && !stages.length) {
      const [k, v] = args.split('=');
      globalArgs[k] = v;
    } else if (stages.length) {
      stages[stages.length - 1].instructions.push({ op, args, line: i + 1 });
    }
  });
  return { stages, globalArgs };
}

function checkDockerfile(report, text = readFileSync(DOCKERFILE, 'utf8'), depsFile = DEPS) {
  const { stages, globalArgs } = parseDockerfile(text);
  const stage = (name) => stages.find((s) => s.stage === name);
  const deps = readDeps(depsFile);

  report.expect(/^debian:(12|bookworm)(@sha256:[0-9a-f]{64})?$/.test(globalArgs.BUILDER_IMAGE ?? ''),
    `BUILDER_IMAGE must default to debian:12 (bookworm), is ${globalArgs.BUILDER_IMAGE}`);
  report.expect(/^debian:(12|bookworm)-slim(@sha256:[0-9a-f]{64})?$/.test(globalArgs.RUNTIME_IMAGE ?? ''),
    `RUNTIME_IMAGE must default to debian:12-slim, is ${globalArgs.RUNTIME_IMAGE}`);
  const builder = stage('builder');
  const base = stage('runtime-base');
  if (!report.expect(builder && builder.from === '${BUILDER_IMAGE}', 'stage "builder" FROM ${BUILDER_IMAGE} is missing')) return;
  if (!report.expect(base && base.from === '${RUNTIME_IMAGE}', 'stage "runtime-base" FROM ${RUNTIME_IMAGE} is missing')) return;

  // Packages come only through install-deps.sh, reading scripts/deps.txt.
  const installs = (s) => s.instructions.filter((x) => x.op === 'RUN' && /install-deps\.sh/.test(x.args));
  for (const s of stages) {
    for (const x of s.instructions.filter((i) => i.op === 'RUN')) {
      report.expect(!/\bapt(-get)?\s+(-\S+\s+)*install\b|\bdpkg\s+-i\b/.test(x.args),
        `Dockerfile line ${x.line}: installs packages directly; use install-deps.sh with scripts/deps.txt`);
    }
  }
  const invocation = (x) => x.args.match(/sh \/tmp\/install-deps\.sh (\S+) \/tmp\/deps\.txt((?: [a-z0-9.+-]+)*)\s*$/);
  const mounts = (x) => x.args.includes('--mount=type=bind,source=scripts/deps.txt,target=/tmp/deps.txt') &&
    x.args.includes('--mount=type=bind,source=deploy/docker/install-deps.sh,target=/tmp/install-deps.sh');
  const bi = installs(builder);
  if (report.expect(bi.length === 1, `builder: expected one install-deps.sh RUN, found ${bi.length}`)) {
    const m = invocation(bi[0]);
    report.expect(m && m[1] === 'build' && mounts(bi[0]), `builder: must run "sh /tmp/install-deps.sh build /tmp/deps.txt" with deps.txt and the script bind-mounted`);
  }
  const ri = installs(base);
  if (report.expect(ri.length === 1, `runtime-base: expected one install-deps.sh RUN, found ${ri.length}`)) {
    const m = invocation(ri[0]);
    report.expect(m && m[1] === 'runtime' && m[2] === '' && mounts(ri[0]),
      'runtime-base: must run exactly "sh /tmp/install-deps.sh runtime /tmp/deps.txt" (no extra packages) with deps.txt bind-mounted');
  }
  for (const s of stages.filter((x) => x !== builder && x !== base)) {
    report.expect(installs(s).length === 0, `stage ${s.stage}: installs packages; only runtime-base may`);
  }
  // install-deps.sh selects exactly the stage's lines.
  for (const st of ['build', 'runtime']) {
    const r = run('sh', [INSTALL_DEPS, '--print', st, depsFile]);
    report.expect(r.status === 0 && r.stdout.trim().split('\n').join(' ') === (deps[st] ?? []).join(' '),
      `install-deps.sh --print ${st} lists [${r.stdout.trim().split('\n').join(' ')}], deps.txt has [${(deps[st] ?? []).join(' ')}]`);
  }
  const r = run('sh', [INSTALL_DEPS, '--print', 'no-such-stage', depsFile]);
  report.expect(r.status === 1 && r.stderr.includes("no 'no-such-stage' package"), 'install-deps.sh must fail on a stage without packages');

  // Build, template, user.
  const buildRun = builder.instructions.find((x) => x.op === 'RUN' && x.args.includes('cmake -S'));
  report.expect(buildRun && /-DCMAKE_BUILD_TYPE=Release/.test(buildRun.args) && /-DHB_BUILD_TESTS=OFF/.test(buildRun.args) &&
    /-DHB_BUILD_BENCHMARKS=OFF/.test(buildRun.args) && /-G Ninja/.test(buildRun.args),
    'builder: must configure Release with Ninja, -DHB_BUILD_TESTS=OFF -DHB_BUILD_BENCHMARKS=OFF');
  for (const target of Object.keys(BINARIES)) {
    report.expect(buildRun && new RegExp(`--target [^&]*\\b${target}\\b`).test(buildRun.args), `builder: does not build ${target}`);
  }
  const fetch = builder.instructions.find((x) => x.op === 'RUN' && x.args.includes('scripts/fetch_data.sh'));
  report.expect(fetch && /--template-only --dest \/out\/data/.test(fetch.args) &&
    /\$\{GRADER_TEMPLATE_SHA256\} +\/out\/data\/grader_template\.txt" \| sha256sum -c -/.test(fetch.args),
    'builder: must fetch the template with fetch_data.sh --template-only and sha256sum -c it');
  const shaArg = builder.instructions.find((x) => x.op === 'ARG' && x.args.startsWith('GRADER_TEMPLATE_SHA256='));
  report.expect(shaArg?.args === `GRADER_TEMPLATE_SHA256=${TEMPLATE_SHA256}`, `builder: GRADER_TEMPLATE_SHA256 must be ${TEMPLATE_SHA256}`);
  const fetchScript = join(SOURCE_DIR, 'scripts', 'fetch_data.sh');
  if (existsSync(fetchScript)) {
    report.expect(readFileSync(fetchScript, 'utf8').includes(`template_sha=${TEMPLATE_SHA256}`),
      'scripts/fetch_data.sh pins another template hash than the Dockerfile');
  } else {
    report.fail('scripts/fetch_data.sh is missing (the image build fetches the template with it)');
  }
  report.expect(base.instructions.some((x) => x.op === 'COPY' && x.args.endsWith(`/out/data/grader_template.txt ${TEMPLATE_PATH}`) && x.args.includes('--from=builder')),
    `runtime-base: must copy the template to ${TEMPLATE_PATH}`);
  report.expect(base.instructions.some((x) => x.op === 'USER' && x.args === '65532:65532'), 'runtime-base: USER must be 65532:65532 (numeric)');
  report.expect(base.instructions.some((x) => x.op === 'RUN' && /useradd [^&]*--uid 65532/.test(x.args)), 'runtime-base: must create the uid 65532 user');

  for (const [target, path] of Object.entries(BINARIES)) {
    const s = stage(target);
    if (!report.expect(s, `Dockerfile has no target ${target}`)) continue;
    report.expect(s.from === 'runtime-base', `${target}: must be FROM runtime-base`);
    report.expect(s.instructions.some((x) => x.op === 'COPY' && x.args === `--from=builder /build/${path} /usr/local/bin/${target}`),
      `${target}: must COPY --from=builder /build/${path} /usr/local/bin/${target}`);
    report.expect(s.instructions.some((x) => x.op === 'ENTRYPOINT' && x.args === `["/usr/local/bin/${target}"]`),
      `${target}: ENTRYPOINT must be ["/usr/local/bin/${target}"]`);
    report.expect(!s.instructions.some((x) => x.op === 'USER'), `${target}: must keep runtime-base's USER`);
  }

  // Every runtime package exists in Debian 12.
  const runtime = deps.runtime ?? [];
  report.expect(runtime.length > 0, 'scripts/deps.txt lists no runtime package');
  // One apt-cache call (each takes seconds); it prints the packages it knows and fails on the rest.
  const show = aptCache(['show', '--no-all-versions', ...runtime]);
  const known = new Set([...show.stdout.matchAll(/^Package: (\S+)$/gm)].map((m) => m[1]));
  for (const pkg of runtime) {
    report.expect(known.has(pkg),
      `runtime package ${pkg}: apt-cache show does not know it (misspelt, or run apt-get update first)`);
  }
}

/** Candidate names of `path` in dpkg's database: itself, its target, their /usr-merged twins. */
function aliases(path) {
  const out = new Set([path]);
  try { out.add(realpathSync(path)); } catch { /* keep the others */ }
  for (const p of [...out]) out.add(p.startsWith('/usr/') ? p.slice(4) : `/usr${p}`);
  return [...out];
}

/** {path: package} for every path dpkg knows, in one `dpkg -S` call (it takes a second each). */
function owners(paths) {
  const all = [...new Set(paths.flatMap(aliases))];
  const byPath = new Map();
  if (!all.length) return (p) => null;
  for (const line of run('dpkg', ['-S', ...all]).stdout.split('\n')) {
    const m = line.match(/^(.+?): (\/\S+)$/);
    if (m) byPath.set(m[2], m[1].split(',')[0].trim().split(':')[0]);
  }
  return (p) => aliases(p).map((a) => byPath.get(a)).find(Boolean) ?? null;
}

/** Packages apt installs for `pkgs` (depends and pre-depends, recursively), with `pkgs`. */
function closure(pkgs) {
  const r = aptCache(['depends', '--recurse', '--no-recommends', '--no-suggests', '--no-conflicts',
    '--no-breaks', '--no-replaces', '--no-enhances', ...pkgs]);
  const out = new Set(pkgs);
  for (const line of r.stdout.split('\n')) {
    if (/^[a-z0-9]/.test(line)) out.add(line.trim().split(':')[0]);
  }
  return out;
}

function checkLibs(report, dir, depsFile = DEPS) {
  const runtime = readDeps(depsFile).runtime ?? [];
  const installed = closure(runtime);
  const listed = new Set(runtime);
  const used = new Set();
  const loads = [];  // {image, soname, path, direct}
  for (const [image, path] of Object.entries(BINARIES)) {
    const bin = join(dir, path);
    if (!report.expect(existsSync(bin), `${bin} does not exist (build ${image} first; HB_BINARY_DIR=${dir})`)) continue;
    const needed = new Set([...run('readelf', ['-d', bin]).stdout.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]));
    report.expect(needed.size > 0, `${image}: readelf -d lists no NEEDED library`);
    const ldd = run('ldd', [bin]);
    if (!report.expect(ldd.status === 0, `${image}: ldd failed: ${ldd.stderr}`)) continue;
    for (const line of ldd.stdout.split('\n')) {
      const m = line.match(/^\s*(\S+) => (\S+)/);
      if (!m) continue;
      if (!report.expect(m[2] !== 'not', `${image}: ${m[1]} is not found by ldd`)) continue;
      loads.push({ image, soname: m[1], path: m[2], direct: needed.has(m[1]) });
    }
  }
  const ownerOf = owners(loads.map((l) => l.path));
  for (const { image, soname, path, direct } of loads) {
    const pkg = ownerOf(path);
    if (!report.expect(pkg, `${image}: ${path} belongs to no Debian package (the image would lack it)`)) continue;
    used.add(pkg);
    report.expect(installed.has(pkg), `${image}: ${path} comes from ${pkg}, which the runtime packages do not install; add "runtime ${pkg}" to scripts/deps.txt`);
    if (direct) {
      report.expect(listed.has(pkg) || BASE_IMAGE_LIBS.has(pkg),
        `${image}: links ${soname} directly, from ${pkg}: list it as "runtime ${pkg}" in scripts/deps.txt (not only as someone's dependency)`);
    }
  }
  for (const pkg of used.size ? runtime : []) {
    if (pkg.startsWith('lib') && !used.has(pkg)) report.note(`runtime package ${pkg} provides no library the binaries load`);
  }
}

/** Each rule rejects the mistake it exists for (fixtures: edited copies, /usr/bin/curl). */
function selftest(report) {
  const tmp = mkdtempSync(join(tmpdir(), 'hb-check-image-'));
  try {
    const dockerfile = readFileSync(DOCKERFILE, 'utf8');
    const deps = readFileSync(DEPS, 'utf8');
    const depsCopy = join(tmp, 'deps.txt');
    writeFileSync(depsCopy, deps);
    const expectFinding = (what, findings, expected) => report.expect(findings.some((e) => e.includes(expected)),
      `self-test "${what}": expected a finding containing "${expected}", got ${JSON.stringify(findings)}`);
    const dockerCases = [
      ['direct apt-get', (t) => t.replace('FROM runtime-base AS hb-grader\n', 'FROM runtime-base AS hb-grader\nRUN apt-get update && apt-get install -y gdb\n'), 'installs packages directly'],
      ['extra runtime package', (t) => t.replace('install-deps.sh runtime /tmp/deps.txt', 'install-deps.sh runtime /tmp/deps.txt curl'), 'no extra packages'],
      ['builder stage from runtime list', (t) => t.replace('install-deps.sh build /tmp/deps.txt', 'install-deps.sh runtime /tmp/deps.txt'), 'builder: must run'],
      ['root user', (t) => t.replace('USER 65532:65532', 'USER root'), 'USER must be 65532:65532'],
      ['wrong binary', (t) => t.replace('/build/simulator/hb-llm-sim', '/build/simulator/hb-sim'), 'hb-llm-sim: must COPY'],
      ['template hash', (t) => t.replace('SHA256=2adf', 'SHA256=3adf'), 'GRADER_TEMPLATE_SHA256 must be'],
      ['tests built', (t) => t.replace('-DHB_BUILD_TESTS=OFF', '-DHB_BUILD_TESTS=ON'), 'HB_BUILD_TESTS=OFF'],
      ['not bookworm', (t) => t.replace('ARG RUNTIME_IMAGE=debian:12-slim', 'ARG RUNTIME_IMAGE=ubuntu:24.04'), 'RUNTIME_IMAGE must default'],
    ];
    for (const [what, edit, expected] of dockerCases) {
      const edited = edit(dockerfile);
      report.expect(edited !== dockerfile, `self-test "${what}": the edit no longer applies to the Dockerfile`);
      const r = new Report('case');
      checkDockerfile(r, edited, depsCopy);
      expectFinding(what, r.errors, expected);
    }
    writeFileSync(depsCopy, `${deps}runtime libno-such-package9\n`);
    let r = new Report('case');
    checkDockerfile(r, dockerfile, depsCopy);
    expectFinding('unknown package', r.errors, 'runtime package libno-such-package9: apt-cache show does not know it');

    // Library coverage, with curl standing in for the three binaries.
    for (const path of Object.values(BINARIES)) {
      mkdirSync(join(tmp, 'bins', dirname(path)), { recursive: true });
      copyFileSync('/usr/bin/curl', join(tmp, 'bins', path));
    }
    writeFileSync(depsCopy, 'runtime libcurl4\nruntime zlib1g\n');
    r = new Report('case');
    checkLibs(r, join(tmp, 'bins'), depsCopy);
    report.expect(r.errors.length === 0, `self-test libs: curl with libcurl4+zlib1g should pass, got ${JSON.stringify(r.errors)}`);
    writeFileSync(depsCopy, 'runtime zlib1g\n');
    r = new Report('case');
    checkLibs(r, join(tmp, 'bins'), depsCopy);
    expectFinding('direct library unlisted', r.errors, 'links libcurl.so.4 directly, from libcurl4');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

function main(argv) {
  let bins = null;
  const modes = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--binaries') bins = argv[++i];
    else modes.push(argv[i]);
  }
  if (modes.length !== 1 || !['dockerfile', 'libs', 'selftest'].includes(modes[0])) {
    console.error('usage: node check-image.mjs [--binaries DIR] dockerfile|libs|selftest');
    return 2;
  }
  const report = new Report(`deploy image ${modes[0]}`);
  if (modes[0] === 'dockerfile') {
    checkDockerfile(report);
  } else if (modes[0] === 'selftest') {
    selftest(report);
  } else {
    const dir = binaryDir(bins);
    if (!dir) report.fail('set HB_BINARY_DIR (or --binaries) to the build folder holding the binaries');
    else checkLibs(report, dir);
  }
  return report.finish();
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = main(process.argv.slice(2));
}
