// Offline checks of the Kubernetes manifests in deploy/k8s (run by ctest, label "deploy"):
//
//   node validate.mjs --modules DIR k8s        render every overlay with `kubectl kustomize`,
//                                               validate each object against the Kubernetes
//                                               schemas (kubernetes-models@4) plus an unknown-field
//                                               check, and the house rules below; render-job.sh
//   node validate.mjs --modules DIR flags       every --flag passed to a container exists in that
//                                               binary's --helpfull ($HB_BINARY_DIR), and the env
//                                               names the binaries read are the ones set
//   node validate.mjs --modules DIR selftest    each rule catches the mistake it is meant to
//
// DIR holds node_modules/ from `npm ci` of deploy/validate/package-lock.json.
// Exit status: 0 when every check passed, 1 otherwise, 2 on bad usage.
import { createRequire } from 'node:module';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BINARIES, Report, SOURCE_DIR, binaryDir, helpFlags, listFiles, run } from './lib.mjs';

const K8S_DIR = join(SOURCE_DIR, 'deploy', 'k8s');
const KUBECTL = process.env.KUBECTL || '/usr/bin/kubectl';
/** Overlays whose objects refer to objects of another overlay (same namespace). */
const COMPANIONS = {
  'grade-example': 'prod', 'policy-example': 'prod', 'watch-example': 'prod', 'watch-cron-example': 'prod',
  'queue-example': 'prod',
};
/** Secrets the manifests use but never create (created by hand, see deploy/README.md). */
const EXTERNAL_SECRETS = new Set(['hb-llm-api-key', 'hb-auth-token', 'hb-quota-redis']);
/** uid/gid of the images (deploy/docker/Dockerfile, USER). */
const IMAGE_UID = 65532;
/** Kinds we deploy; validating any other kind is an error until it is added here on purpose. */
const KNOWN_KINDS = new Set([
  'v1/Namespace', 'v1/ServiceAccount', 'v1/ConfigMap', 'v1/Secret', 'v1/Service', 'v1/Pod',
  'v1/PersistentVolumeClaim', 'apps/v1/Deployment', 'batch/v1/Job', 'batch/v1/CronJob',
  'autoscaling/v2/HorizontalPodAutoscaler', 'policy/v1/PodDisruptionBudget',
  'networking.k8s.io/v1/NetworkPolicy',
]);

// ------------------------------------------------------------------------------------------
// Models and the unknown-field index.

/** Loads yaml@2 and kubernetes-models from DIR/node_modules. */
export function loadModules(modulesDir) {
  const require = createRequire(join(modulesDir, 'noop.js'));
  const yaml = require('yaml');
  const modelsRoot = join(modulesDir, 'node_modules', 'kubernetes-models');
  const apimachineryRoot = join(modulesDir, 'node_modules', '@kubernetes-models', 'apimachinery');
  const index = buildFieldIndex([modelsRoot, apimachineryRoot]);
  return {
    yaml,
    index,
    modelClass(apiVersion, kind) {
      try {
        return require(`kubernetes-models/${apiVersion}`)[kind] ?? null;
      } catch {
        return null;
      }
    },
    topType(apiVersion, kind) {
      const dts = join(modelsRoot, apiVersion, `${kind}.d.ts`);
      if (!existsSync(dts)) return null;
      const m = readFileSync(dts, 'utf8').match(new RegExp(`export \\{ I${kind} as (\\w+)`));
      return m ? m[1] : null;
    },
  };
}

/**
 * kubernetes-models validates types, enums and required fields, but accepts unknown fields (a
 * misspelt "readinesProbe" passes). Its .d.ts files list every field of every type, so we
 * build {typeAlias: {field: {type, array}}} from them and reject fields the API does not have.
 */
function buildFieldIndex(roots) {
  const index = new Map();
  for (const root of roots) {
    for (const file of listFiles(root, ['.d.ts'])) {
      const text = readFileSync(file, 'utf8');
      const local = new Map();
      for (const m of text.matchAll(/^export interface (\w+)(?: extends ([\w, ]+))? \{\n([\s\S]*?)\n\}/gm)) {
        const fields = {};
        if (m[2] && m[2].includes('TypeMeta')) {
          fields.apiVersion = {};
          fields.kind = {};
        }
        for (const f of m[3].matchAll(/^ {4}"([^"]+)"\??: (.+?);?$/gm)) {
          const t = f[2].trim();
          let a = t.match(/^Array<(I\w+)>$/);
          if (a) fields[f[1]] = { type: a[1], array: true };
          else if ((a = t.match(/^(I\w+)$/))) fields[f[1]] = { type: a[1] };
          else fields[f[1]] = {};
        }
        local.set(m[1], fields);
      }
      for (const m of text.matchAll(/^export \{ (\w+) as (\w+)/gm)) {
        if (local.has(m[1])) index.set(m[2], local.get(m[1]));
      }
    }
  }
  return index;
}

/** Reports every field of `value` that type `type` does not declare, with its path. */
function unknownFields(index, type, value, path, out) {
  const fields = index.get(type);
  if (!fields || value === null || typeof value !== 'object' || Array.isArray(value)) return;
  for (const [key, child] of Object.entries(value)) {
    const f = fields[key];
    if (!f) {
      out.push(`${path}.${key}: unknown field (not in ${type.replace(/^IIoK8s/, '')})`);
      continue;
    }
    if (!f.type) continue;
    if (f.array && Array.isArray(child)) {
      child.forEach((c, i) => unknownFields(index, f.type, c, `${path}.${key}[${i}]`, out));
    } else if (!f.array) {
      unknownFields(index, f.type, child, `${path}.${key}`, out);
    }
  }
}

/** Schema-validates each object. `label` prefixes messages. */
export function checkSchemas(report, models, objects, label) {
  for (const obj of objects) {
    const id = `${label}: ${obj.kind}/${obj.metadata?.name}`;
    const key = `${obj.apiVersion}/${obj.kind}`;
    if (!report.expect(KNOWN_KINDS.has(key), `${id}: kind ${key} is not in KNOWN_KINDS of validate.mjs`)) continue;
    const Cls = models.modelClass(obj.apiVersion, obj.kind);
    if (!report.expect(Cls, `${id}: kubernetes-models has no model for ${key}`)) continue;
    try {
      new Cls(obj).validate();
      report.passed++;
    } catch (e) {
      report.fail(`${id}: schema: ${String(e.message).split('\n').slice(0, 5).join('; ')}`);
    }
    const top = models.topType(obj.apiVersion, obj.kind);
    if (!report.expect(top && models.index.has(top), `${id}: no field index for ${key}`)) continue;
    const unknown = [];
    unknownFields(models.index, top, obj, obj.kind, unknown);
    report.expect(unknown.length === 0, `${id}: ${unknown.join('; ')}`);
  }
}

// ------------------------------------------------------------------------------------------
// Reading manifests.

/** `kubectl kustomize DIR` parsed into objects; throws with kubectl's message on failure. */
export function renderOverlay(yaml, dir) {
  if (!existsSync(KUBECTL)) {
    throw new Error(`kubectl not found at ${KUBECTL} (set KUBECTL); it renders the overlays`);
  }
  const r = run(KUBECTL, ['kustomize', dir]);
  if (r.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${r.stderr || r.error}`);
  return parseDocs(yaml, r.stdout, dir);
}

/** Parses multi-document YAML text, rejecting YAML errors and warnings. */
export function parseDocs(yaml, text, where) {
  const docs = yaml.parseAllDocuments(text, { prettyErrors: true });
  const objects = [];
  for (const d of docs) {
    if (d.errors.length || d.warnings.length) {
      throw new Error(`${where}: ${[...d.errors, ...d.warnings].map((e) => e.message).join('; ')}`);
    }
    const o = d.toJS();
    if (o !== null && o !== undefined) objects.push(o);
  }
  return objects;
}

/** Image name without registry, tag or digest: "reg.io/x/hb-grader:1.0" -> "hb-grader". */
export function imageBase(image) {
  return basename(String(image).split('@')[0]).split(':')[0];
}

/** Splits a container's args into {sub, flags: Map(name -> value|null), positional}. */
export function parseArgs(args = []) {
  const flags = new Map();
  const positional = [];
  let sub = null;
  args.forEach((a, i) => {
    const s = String(a);
    if (s.startsWith('--')) {
      const eq = s.indexOf('=');
      const name = eq < 0 ? s.slice(2) : s.slice(2, eq);
      const value = eq < 0 ? null : s.slice(eq + 1);
      if (!flags.has(name)) flags.set(name, []);
      flags.get(name).push(value);
    } else if (i === 0) {
      sub = s;
    } else {
      positional.push(s);
    }
  });
  return { sub, flags, positional };
}

/** Go/Abseil duration ("30s", "1m30s", "500ms") in seconds, or NaN. */
export function parseDuration(s) {
  const units = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, ns: 1e-9 };
  const str = String(s);
  let total = 0;
  let rest = str;
  if (!/^(\d+(\.\d+)?(h|ms|us|ns|m|s))+$/.test(str)) return NaN;
  for (const m of rest.matchAll(/(\d+(?:\.\d+)?)(h|ms|us|ns|m|s)/g)) total += Number(m[1]) * units[m[2]];
  return total;
}

/** host:port -> port number (or NaN). */
function portOf(addr) {
  const m = String(addr).match(/:(\d+)$/);
  return m ? Number(m[1]) : NaN;
}

/** Kinds that run pods (a CronJob's through its jobTemplate). */
const WORKLOAD_KINDS = ['Deployment', 'Job', 'CronJob', 'Pod'];

function podTemplateOf(obj) {
  if (obj.kind === 'CronJob') return obj.spec?.jobTemplate?.spec?.template ?? null;
  return obj.spec?.template ?? null;
}
function podSpecOf(obj) {
  if (obj.kind === 'Pod') return obj.spec;
  return podTemplateOf(obj)?.spec ?? null;
}
function podLabelsOf(obj) {
  if (obj.kind === 'Pod') return obj.metadata?.labels ?? {};
  return podTemplateOf(obj)?.metadata?.labels ?? {};
}
function matches(selector, labels) {
  if (!selector) return false;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}
function find(objects, kind, name) {
  return objects.find((o) => o.kind === kind && o.metadata?.name === name) ?? null;
}

/** Value of env var `name` in container `c`: a literal or a resolvable configMapKeyRef. */
function envValue(objects, c, name) {
  const e = (c.env ?? []).find((x) => x.name === name);
  if (!e) return undefined;
  if (e.value !== undefined) return String(e.value);
  const ref = e.valueFrom?.configMapKeyRef;
  if (ref) return find(objects, 'ConfigMap', ref.name)?.data?.[ref.key];
  return undefined;
}

/** Expands $(VAR) from the container's env; unresolvable references stay as they are. */
function expand(objects, c, value) {
  if (value === null || value === undefined) return value;
  return String(value).replace(/\$\((\w+)\)/g, (all, v) => envValue(objects, c, v) ?? all);
}

/** Every container of every workload: [{obj, spec, c, image}]. */
function containersOf(objects) {
  const out = [];
  for (const obj of objects) {
    const spec = podSpecOf(obj);
    if (!spec || !WORKLOAD_KINDS.includes(obj.kind)) continue;
    for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
      out.push({ obj, spec, c, image: imageBase(c.image) });
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// House rules: what the schemas cannot know.

/**
 * Checks `objects` (one overlay's render); `refs` are the objects references may point to
 * (the overlay's own plus its companion's).
 */
export function checkHouseRules(report, objects, refs, label) {
  const at = (o) => `${label}: ${o.kind}/${o.metadata?.name}`;

  // Pods: locked down, sized, referencing only what exists.
  for (const obj of objects) {
    const spec = podSpecOf(obj);
    if (!spec || !WORKLOAD_KINDS.includes(obj.kind)) continue;
    const id = at(obj);
    const psc = spec.securityContext ?? {};
    report.expect(psc.runAsNonRoot === true, `${id}: pod securityContext.runAsNonRoot must be true`);
    report.expect(psc.runAsUser === IMAGE_UID && psc.runAsGroup === IMAGE_UID,
      `${id}: runAsUser/runAsGroup must be ${IMAGE_UID} (the images' USER)`);
    report.expect(psc.seccompProfile?.type === 'RuntimeDefault', `${id}: seccompProfile must be RuntimeDefault`);
    report.expect(spec.automountServiceAccountToken === false,
      `${id}: automountServiceAccountToken must be false (no pod calls the Kubernetes API)`);
    if (spec.serviceAccountName) {
      report.expect(find(refs, 'ServiceAccount', spec.serviceAccountName),
        `${id}: ServiceAccount ${spec.serviceAccountName} is not defined`);
    }
    const volumes = new Map((spec.volumes ?? []).map((v) => [v.name, v]));
    for (const v of volumes.values()) {
      if (v.persistentVolumeClaim) {
        report.expect(find(refs, 'PersistentVolumeClaim', v.persistentVolumeClaim.claimName),
          `${id}: volume ${v.name}: PersistentVolumeClaim ${v.persistentVolumeClaim.claimName} is not defined`);
      }
      if (v.secret) {
        const s = find(refs, 'Secret', v.secret.secretName);
        report.expect(s || EXTERNAL_SECRETS.has(v.secret.secretName),
          `${id}: volume ${v.name}: Secret ${v.secret.secretName} is neither defined nor a known external secret`);
        for (const item of v.secret.items ?? []) {
          if (s) report.expect(item.key in (s.data ?? {}), `${id}: Secret ${s.metadata.name} has no key ${item.key}`);
        }
      }
      if (v.configMap) {
        report.expect(find(refs, 'ConfigMap', v.configMap.name), `${id}: ConfigMap ${v.configMap.name} is not defined`);
      }
    }
    for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
      const cid = `${id} container ${c.name}`;
      const sc = c.securityContext ?? {};
      report.expect(sc.allowPrivilegeEscalation === false, `${cid}: allowPrivilegeEscalation must be false`);
      report.expect(sc.readOnlyRootFilesystem === true, `${cid}: readOnlyRootFilesystem must be true`);
      report.expect((sc.capabilities?.drop ?? []).includes('ALL'), `${cid}: capabilities must drop ALL`);
      report.expect(!sc.capabilities?.add?.length, `${cid}: must not add capabilities`);
      for (const kind of ['requests', 'limits']) {
        for (const r of ['cpu', 'memory']) {
          report.expect(c.resources?.[kind]?.[r] !== undefined, `${cid}: resources.${kind}.${r} is missing`);
        }
      }
      report.expect(c.image, `${cid}: no image`);
      for (const m of c.volumeMounts ?? []) {
        report.expect(volumes.has(m.name), `${cid}: volumeMount ${m.name} has no volume`);
      }
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.configMapKeyRef;
        if (ref) {
          const cm = find(refs, 'ConfigMap', ref.name);
          report.expect(cm && ref.key in (cm.data ?? {}), `${cid}: env ${e.name}: ConfigMap ${ref.name} has no key ${ref.key}`);
        }
        const sref = e.valueFrom?.secretKeyRef;
        if (sref) {
          report.expect(find(refs, 'Secret', sref.name) || EXTERNAL_SECRETS.has(sref.name),
            `${cid}: env ${e.name}: Secret ${sref.name} is not defined`);
        }
      }
      const envNames = new Set((c.env ?? []).map((e) => e.name));
      for (const a of [...(c.command ?? []), ...(c.args ?? [])]) {
        for (const m of String(a).matchAll(/\$\((\w+)\)/g)) {
          report.expect(envNames.has(m[1]), `${cid}: "${a}" uses $(${m[1]}), which is not in its env (it would stay unexpanded)`);
        }
      }
    }
  }

  // Services select pods and name ports those pods have.
  const workloads = objects.filter((o) => podSpecOf(o) && WORKLOAD_KINDS.includes(o.kind));
  for (const svc of objects.filter((o) => o.kind === 'Service')) {
    const id = at(svc);
    const pods = workloads.filter((w) => matches(svc.spec?.selector, podLabelsOf(w)));
    if (!report.expect(pods.length, `${id}: selector matches no pod template`)) continue;
    for (const p of svc.spec.ports ?? []) {
      const target = p.targetPort ?? p.port;
      const ok = pods.every((w) => (podSpecOf(w).containers ?? []).some((c) =>
        (c.ports ?? []).some((cp) => (typeof target === 'string' ? cp.name === target : cp.containerPort === target))));
      report.expect(ok, `${id}: port ${p.name}: targetPort ${target} is not a port of the selected containers`);
    }
  }
  for (const o of objects.filter((x) => x.kind === 'PodDisruptionBudget')) {
    report.expect(workloads.some((w) => matches(o.spec?.selector?.matchLabels, podLabelsOf(w))),
      `${at(o)}: selector matches no pod template`);
  }
  for (const o of objects.filter((x) => x.kind === 'HorizontalPodAutoscaler')) {
    const t = o.spec?.scaleTargetRef ?? {};
    const target = find(objects, t.kind, t.name);
    if (report.expect(target, `${at(o)}: scale target ${t.kind}/${t.name} is not defined`)) {
      report.expect(target.spec?.replicas === undefined,
        `${at(o)}: ${t.kind}/${t.name} sets replicas, which fights the autoscaler on every apply`);
      report.expect(o.spec.minReplicas <= o.spec.maxReplicas, `${at(o)}: minReplicas > maxReplicas`);
    }
  }

  checkGrader(report, objects, refs, label);
  checkEnv(report, objects, refs, label);
  checkAuth(report, objects, refs, label);
  checkJobs(report, objects, refs, label);
  checkKueue(report, objects, label);
  checkSimulator(report, objects, refs, label);
  checkQuota(report, objects, refs, label);
}

/** The grader Deployment agrees with its own flags, Service, probes and NetworkPolicy. */
function checkGrader(report, objects, refs, label) {
  for (const { obj, spec, c } of containersOf(objects).filter((x) => x.image === 'hb-grader')) {
    const id = `${label}: ${obj.kind}/${obj.metadata.name} container ${c.name}`;
    const { flags } = parseArgs(c.args);
    const flag = (n) => expand(objects, c, flags.get(n)?.[0]);
    const grpcPort = portOf(flag('listen') ?? '0.0.0.0:50051');
    const metricsPort = portOf(flag('metrics-listen') ?? '0.0.0.0:9464');
    const port = (name) => (c.ports ?? []).find((p) => p.name === name)?.containerPort;
    report.expect(port('grpc') === grpcPort, `${id}: containerPort "grpc" (${port('grpc')}) != --listen port ${grpcPort}`);
    report.expect(port('metrics') === metricsPort,
      `${id}: containerPort "metrics" (${port('metrics')}) != --metrics-listen port ${metricsPort}`);
    for (const probe of ['readinessProbe', 'livenessProbe']) {
      report.expect(c[probe]?.grpc?.port === grpcPort,
        `${id}: ${probe} must be a native grpc probe on the --listen port ${grpcPort}`);
    }
    const ann = obj.spec.template.metadata?.annotations ?? {};
    report.expect(ann['prometheus.io/scrape'] === 'true' && Number(ann['prometheus.io/port']) === metricsPort,
      `${id}: prometheus.io/scrape must be "true" and prometheus.io/port the --metrics-listen port ${metricsPort}`);

    // Shutdown budget: preStop sleep + drain must fit in the grace period.
    const drain = parseDuration(flag('drain-timeout') ?? '30s');
    const pre = c.lifecycle?.preStop;
    let preStop = NaN;
    if (pre?.sleep) preStop = Number(pre.sleep.seconds);
    else if (pre?.exec?.command?.length === 2 && /(^|\/)sleep$/.test(pre.exec.command[0])) preStop = Number(pre.exec.command[1]);
    report.expect(preStop > 0, `${id}: preStop must sleep a few seconds (exec sleep N or the sleep action)`);
    const grace = spec.terminationGracePeriodSeconds ?? 30;
    report.expect(grace >= preStop + drain,
      `${id}: terminationGracePeriodSeconds ${grace} < preStop ${preStop}s + --drain-timeout ${drain}s`);

    // The API key file lies in a mounted Secret that has that key.
    const keyFile = flag('llm-api-key-file');
    if (report.expect(keyFile, `${id}: --llm-api-key-file must be passed (the key comes from a Secret file)`)) {
      const mount = (c.volumeMounts ?? []).find((m) => keyFile.startsWith(`${m.mountPath}/`));
      const vol = mount && (spec.volumes ?? []).find((v) => v.name === mount.name);
      const file = mount && keyFile.slice(mount.mountPath.length + 1);
      const items = vol?.secret?.items;
      report.expect(vol?.secret && (!items || items.some((i) => i.path === file)),
        `${id}: --llm-api-key-file ${keyFile} is not a file of a mounted Secret volume`);
    }
    report.expect(!(c.env ?? []).some((e) => e.name === 'OPENAI_API_KEY' && e.value !== undefined),
      `${id}: OPENAI_API_KEY must not be a literal in the manifest`);
    report.expect(flag('grader-template') === '/usr/share/healthbench/grader_template.txt',
      `${id}: --grader-template must be the image's /usr/share/healthbench/grader_template.txt`);

    // The headless Service and the NetworkPolicy agree with the ports.
    const labels = podLabelsOf(obj);
    const svc = refs.find((s) => s.kind === 'Service' && s.spec?.clusterIP === 'None' && matches(s.spec.selector, labels));
    if (report.expect(svc, `${id}: no headless Service selects the grader pods`)) {
      const p = (svc.spec.ports ?? []).find((x) => x.name === 'grpc');
      report.expect(p && (p.targetPort === 'grpc' || p.targetPort === grpcPort),
        `${id}: Service ${svc.metadata.name} needs a port named grpc targeting ${grpcPort}`);
    }
    const np = refs.find((n) => n.kind === 'NetworkPolicy' && matches(n.spec?.podSelector?.matchLabels, labels));
    if (report.expect(np, `${id}: no NetworkPolicy selects the grader pods`)) {
      const rules = np.spec.ingress ?? [];
      const portsOf = (r) => (r.ports ?? []).map((p) => p.port);
      const grpcRules = rules.filter((r) => portsOf(r).some((p) => p === grpcPort || p === 'grpc'));
      const metricsRules = rules.filter((r) => portsOf(r).some((p) => p === metricsPort || p === 'metrics'));
      report.expect(grpcRules.length, `${id}: NetworkPolicy ${np.metadata.name} admits nothing to --listen port ${grpcPort}`);
      report.expect(metricsRules.length, `${id}: NetworkPolicy ${np.metadata.name} admits nothing to --metrics-listen port ${metricsPort}`);
      report.expect(rules.every((r) => (r.from ?? []).length > 0),
        `${id}: NetworkPolicy ${np.metadata.name} has a rule without "from" (admits everyone)`);
      report.expect(metricsRules.every((r) => r.from.every((f) => f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === 'monitoring')),
        `${id}: NetworkPolicy ${np.metadata.name}: metrics must be admitted from the monitoring namespace only`);
      report.expect(grpcRules.some((r) => r.from.some((f) => f.namespaceSelector?.matchLabels?.['healthbench.openai/grader-client'] === 'true')),
        `${id}: NetworkPolicy ${np.metadata.name}: declared client namespaces (healthbench.openai/grader-client) are not admitted`);
      report.expect(grpcRules.every((r) => r.from.every((f) => f.podSelector || f.namespaceSelector?.matchLabels?.['healthbench.openai/grader-client'] === 'true')),
        `${id}: NetworkPolicy ${np.metadata.name}: gRPC is admitted from an undeclared source`);
    }
  }
}

/**
 * hb-env: its ClusterIP Service and NetworkPolicy expose the gRPC port (--listen) and the HTTP
 * port (--http-listen: the ORS API and the trainers' reward routes) to declared clients only,
 * and metrics to the monitoring namespace only.
 */
function checkEnv(report, objects, refs, label) {
  for (const { obj, c } of containersOf(objects).filter((x) => x.image === 'hb-env')) {
    const id = `${label}: ${obj.kind}/${obj.metadata.name} container ${c.name}`;
    const { flags } = parseArgs(c.args);
    const flag = (n) => expand(objects, c, flags.get(n)?.[0]);
    const ports = { grpc: portOf(flag('listen') ?? '127.0.0.1:50061'), http: portOf(flag('http-listen') ?? '127.0.0.1:8080'),
      metrics: portOf(flag('metrics-listen') ?? '127.0.0.1:9465') };
    const container = (name) => (c.ports ?? []).find((p) => p.name === name)?.containerPort;
    for (const [name, port] of Object.entries(ports)) {
      report.expect(container(name) === port, `${id}: containerPort "${name}" (${container(name)}) != its flag's port ${port}`);
    }
    const labels = podLabelsOf(obj);
    const svc = refs.find((s) => s.kind === 'Service' && s.spec?.clusterIP !== 'None' && matches(s.spec.selector, labels));
    if (report.expect(svc, `${id}: no ClusterIP Service selects the hb-env pods`)) {
      for (const name of ['grpc', 'http']) {
        const p = (svc.spec.ports ?? []).find((x) => x.name === name);
        report.expect(p && (p.targetPort === name || p.targetPort === ports[name]),
          `${id}: Service ${svc.metadata.name} needs a port named ${name} targeting ${ports[name]}`);
      }
    }
    const np = refs.find((n) => n.kind === 'NetworkPolicy' && matches(n.spec?.podSelector?.matchLabels, labels));
    if (!report.expect(np, `${id}: no NetworkPolicy selects the hb-env pods`)) continue;
    const rules = np.spec.ingress ?? [];
    const admits = (port, name) => rules.filter((r) => (r.ports ?? []).some((p) => p.port === port || p.port === name));
    const declared = (f) => f.podSelector?.matchLabels?.['healthbench.openai/env-client'] === 'true' ||
      f.namespaceSelector?.matchLabels?.['healthbench.openai/env-client'] === 'true';
    report.expect(rules.every((r) => (r.from ?? []).length > 0),
      `${id}: NetworkPolicy ${np.metadata.name} has a rule without "from" (admits everyone)`);
    for (const name of ['grpc', 'http']) {
      const admitted = admits(ports[name], name);
      report.expect(admitted.length, `${id}: NetworkPolicy ${np.metadata.name} admits nothing to the ${name} port ${ports[name]}`);
      report.expect(admitted.every((r) => (r.from ?? []).every(declared)),
        `${id}: NetworkPolicy ${np.metadata.name}: the ${name} port is admitted from an undeclared source (label healthbench.openai/env-client)`);
    }
    report.expect(admits(ports.metrics, 'metrics').every((r) => (r.from ?? []).every((f) => f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === 'monitoring')),
      `${id}: NetworkPolicy ${np.metadata.name}: metrics must be admitted from the monitoring namespace only`);
  }
}

/** Name of the Secret whose mounted volume holds the file `path` in container `c`, or null. */
function secretOfFile(spec, c, path) {
  if (!path) return null;
  const mount = (c.volumeMounts ?? []).find((m) => String(path).startsWith(`${m.mountPath}/`));
  const vol = mount && (spec.volumes ?? []).find((v) => v.name === mount.name);
  const file = mount && String(path).slice(mount.mountPath.length + 1);
  const items = vol?.secret?.items;
  return vol?.secret && (!items || items.some((i) => i.path === file)) ? vol.secret.secretName : null;
}

/** Default listen addresses of the servers (their --help); hb-grader's gRPC one is 0.0.0.0. */
const LISTEN_DEFAULTS = {
  'hb-grader': { listen: '0.0.0.0:50051' },
  'hb-env': { listen: '127.0.0.1:50061', 'http-listen': '127.0.0.1:8080' },
};

/**
 * hb-grader and hb-env refuse a non-loopback listen address unless callers must authenticate
 * (--auth-token-file in a mounted Secret, or --tls-client-ca-file) or --allow-insecure; and a
 * client of a grader fleet that checks tokens sends one from the same Secret.
 */
function checkAuth(report, objects, refs, label) {
  const loopback = (addr) => /^(127\.\d+\.\d+\.\d+|localhost|\[::1\]):\d+$/.test(String(addr));
  for (const { obj, spec, c, image } of containersOf(objects).filter((x) => LISTEN_DEFAULTS[x.image])) {
    const id = `${label}: ${obj.kind}/${obj.metadata.name} container ${c.name}`;
    const { flags } = parseArgs(c.args);
    const flag = (n) => expand(objects, c, flags.get(n)?.[0]);
    const open = Object.entries(LISTEN_DEFAULTS[image]).filter(([n, d]) => !loopback(flag(n) ?? d)).map(([n]) => `--${n}`);
    const tokenFile = flag('auth-token-file');
    const insecure = flags.has('allow-insecure') && !['false', '0'].includes(String(flag('allow-insecure')));
    if (open.length) {
      report.expect(tokenFile || flag('tls-client-ca-file') || insecure,
        `${id}: ${open.join(', ')} is not loopback but neither --auth-token-file, --tls-client-ca-file nor --allow-insecure is passed (${image} refuses to start)`);
    }
    if (tokenFile) {
      report.expect(secretOfFile(spec, c, tokenFile), `${id}: --auth-token-file ${tokenFile} is not a file of a mounted Secret volume`);
    }
  }
  const graders = containersOf(refs).filter((x) => x.image === 'hb-grader');
  for (const { obj, spec, c } of containersOf(objects)) {
    const { flags } = parseArgs(c.args);
    const m = String(flags.get('grader')?.[0] ?? '').match(/^dns:\/\/\/([a-z0-9-]+):\d+$/);
    const svc = m && find(refs, 'Service', m[1]);
    const g = svc && graders.find((x) => matches(svc.spec.selector, podLabelsOf(x.obj)));
    const serverTokens = g && secretOfFile(g.spec, g.c, parseArgs(g.c.args).flags.get('auth-token-file')?.[0]);
    if (!serverTokens) continue;
    const id = `${label}: ${obj.kind}/${obj.metadata.name} container ${c.name}`;
    const sent = secretOfFile(spec, c, flags.get('grader-token-file')?.[0]);
    report.expect(sent === serverTokens,
      `${id}: --grader ${m[0]} checks tokens of Secret ${serverTokens}; --grader-token-file must be a file of a mounted volume of that Secret`);
  }
}

/** Grading and merge Jobs: Indexed, failure policy by exit code, paths on the right volumes. */
function checkJobs(report, objects, refs, label) {
  const graders = containersOf(refs).filter((x) => x.image === 'hb-grader');
  for (const { obj, spec, c } of containersOf(objects).filter((x) => x.image === 'hb-orchestrator' && !x.c.command)) {
    const id = `${label}: ${obj.kind}/${obj.metadata.name} container ${c.name}`;
    const { sub, flags, positional } = parseArgs(c.args);
    const flag = (n) => flags.get(n)?.[0];
    const mounts = c.volumeMounts ?? [];
    const mountOf = (path) => mounts.find((m) => String(path).startsWith(`${m.mountPath}/`));
    const volumeOf = (m) => (spec.volumes ?? []).find((v) => v.name === m?.name);
    if (sub === 'watch') {
      checkWatch(report, id, obj, spec, flags, { mountOf, volumeOf, refs, graders });
      continue;
    }
    if (!report.expect(obj.kind === 'Job', `${id}: hb-orchestrator runs as a Job`)) continue;
    report.expect(spec.restartPolicy === 'Never', `${id}: restartPolicy must be Never (podFailurePolicy needs it)`);
    const rules = obj.spec.podFailurePolicy?.rules ?? [];
    const exitRule = (code) => rules.find((r) => r.onExitCodes?.operator === 'In' && r.onExitCodes.values.includes(code));
    report.expect(exitRule(2)?.action === 'FailJob', `${id}: exit code 2 (bad input) must FailJob`);
    report.expect(rules.some((r) => r.action === 'Ignore' && (r.onPodConditions ?? []).some((p) => p.type === 'DisruptionTarget')),
      `${id}: the DisruptionTarget condition must be ignored`);
    for (const r of rules) {
      if (r.onExitCodes?.containerName) {
        report.expect(r.onExitCodes.containerName === c.name, `${id}: podFailurePolicy names container ${r.onExitCodes.containerName}`);
      }
    }

    if (sub === 'run') {
      report.expect(obj.spec.completionMode === 'Indexed', `${id}: the grading Job must be Indexed`);
      report.expect(Number(flag('shard-count')) === obj.spec.completions,
        `${id}: --shard-count ${flag('shard-count')} != completions ${obj.spec.completions}`);
      report.expect(obj.spec.parallelism <= obj.spec.completions, `${id}: parallelism > completions`);
      report.expect(obj.spec.backoffLimitPerIndex >= 0, `${id}: backoffLimitPerIndex must be set (retries per shard)`);
      report.expect(exitRule(4)?.action === 'Ignore', `${id}: exit code 4 (interrupted, resumable) must be Ignored (retried uncounted)`);
      report.expect(obj.spec.podReplacementPolicy === 'Failed',
        `${id}: podReplacementPolicy must be Failed (never two pods on one shard folder)`);
      const idx = (c.env ?? []).find((e) => e.name === 'JOB_COMPLETION_INDEX');
      report.expect(idx?.valueFrom?.fieldRef?.fieldPath === "metadata.annotations['batch.kubernetes.io/job-completion-index']",
        `${id}: env JOB_COMPLETION_INDEX must come from the job-completion-index annotation`);
      const out = flag('out') ?? '';
      // No hand between shard and report: the shards merge themselves (the last to complete
      // merges OUT/shard-* into OUT/merged), so --out is the checkpoint's folder, one for all.
      report.expect(flags.has('merge-when-complete'),
        `${id}: a sharded grading Job must merge by itself (--merge-when-complete), not through a suspended merge Job a person patches`);
      report.expect(!out.includes('$(JOB_COMPLETION_INDEX)'),
        `${id}: --out ${out} must be the checkpoint's folder, not per shard (run writes OUT/shard-<index> and merges into OUT/merged)`);
      const outMount = mountOf(out);
      report.expect(outMount && !outMount.readOnly && volumeOf(outMount)?.persistentVolumeClaim,
        `${id}: --out ${out} must be on a writable PersistentVolumeClaim`);
      const pvc = outMount && find(refs, 'PersistentVolumeClaim', volumeOf(outMount)?.persistentVolumeClaim?.claimName);
      report.expect(!pvc || (pvc.spec.accessModes ?? []).includes('ReadWriteMany'),
        `${id}: the results volume must be ReadWriteMany (shards run on many nodes)`);
      for (const name of ['dataset', 'responses', 'grader-template']) {
        for (const v of flags.get(name) ?? []) {
          const path = name === 'responses' ? String(v).slice(String(v).indexOf('=') + 1) : v;
          const ok = name === 'grader-template' ? path === '/usr/share/healthbench/grader_template.txt' : mountOf(path);
          report.expect(ok, `${id}: --${name} ${path} is not on a mounted volume (or the image's template)`);
        }
      }
      checkPolicies(report, id, obj, flags.get('policy') ?? [], refs);
      checkGraderTarget(report, id, obj, flag('grader') ?? '', refs, graders);
    } else if (sub === 'merge') {
      // A merge Job either waits suspended for a person to patch it, or starts before the shards.
      report.fail(`${id}: merge runs in the grading Job (run --merge-when-complete), not as a ${obj.spec.suspend ? 'suspended ' : ''}Job a person must start`);
    } else if (sub === 'compare') {
      report.expect(obj.spec.completionMode !== 'Indexed', `${id}: compare is one pod, not an Indexed Job`);
      report.expect(positional.length >= 2, `${id}: compare needs at least two result folders, got ${positional.length}`);
      for (const dir of positional) {
        report.expect(mountOf(dir), `${id}: result folder ${dir} is not on a mounted volume`);
      }
      const outMount = mountOf(flag('out') ?? '');
      report.expect(outMount && !outMount.readOnly, `${id}: --out must be on a writable volume`);
    } else {
      report.fail(`${id}: unexpected subcommand ${sub}`);
    }
  }
}

/** `--grader dns:///SERVICE:PORT` reaches the grader fleet: a headless Service whose grpc port is
 * the graders' --listen port, and a grader NetworkPolicy that admits `obj`'s pods. */
function checkGraderTarget(report, id, obj, target, refs, graders) {
  const m = target.match(/^dns:\/\/\/([a-z0-9-]+):(\d+)$/);
  if (report.expect(m, `${id}: --grader ${target} must be dns:///SERVICE:PORT (round_robin over the headless Service)`)) {
    const svc = find(refs, 'Service', m[1]);
    if (report.expect(svc, `${id}: --grader names Service ${m[1]}, which is not defined`)) {
      report.expect(svc.spec.clusterIP === 'None', `${id}: Service ${m[1]} must be headless (clusterIP: None)`);
      const sp = (svc.spec.ports ?? []).find((p) => p.port === Number(m[2]));
      report.expect(sp?.name === 'grpc', `${id}: Service ${m[1]} has no port ${m[2]} named grpc`);
      const g = graders.find((x) => matches(svc.spec.selector, podLabelsOf(x.obj)));
      if (report.expect(g, `${id}: Service ${m[1]} selects no grader`)) {
        const listen = portOf(expand(refs, g.c, parseArgs(g.c.args).flags.get('listen')?.[0] ?? ':50051'));
        report.expect(sp?.targetPort === 'grpc' || sp?.targetPort === listen,
          `${id}: Service ${m[1]} port ${m[2]} does not reach the grader's --listen port ${listen}`);
      }
      const np = refs.find((n) => n.kind === 'NetworkPolicy' && matches(n.spec?.podSelector?.matchLabels, podLabelsOf(g?.obj ?? {})));
      report.expect(!np || (np.spec.ingress ?? []).some((r) => (r.from ?? []).some((f) => f.podSelector && !f.namespaceSelector && matches(f.podSelector.matchLabels, podLabelsOf(obj)))),
        `${id}: the grader NetworkPolicy does not admit this Job's pods (labels ${JSON.stringify(podLabelsOf(obj))})`);
    }
  }
}

/**
 * `watch`: one watcher per --out, as a Deployment of one replica replaced by Recreate (never two
 * at once), or as a CronJob of `--once` runs that never overlap; its --out on a writable
 * PersistentVolumeClaim, its inputs mounted, the grader fleet reachable.
 */
function checkWatch(report, id, obj, spec, flags, { mountOf, volumeOf, refs, graders }) {
  const once = flags.has('once') && flags.get('once')[0] !== 'false';
  if (obj.kind === 'Deployment') {
    report.expect(obj.spec.replicas === 1,
      `${id}: the watcher Deployment must have replicas: 1 (one watcher per --out; a second exits 2)`);
    report.expect(obj.spec.strategy?.type === 'Recreate',
      `${id}: the watcher Deployment must use strategy Recreate (a rolling update starts the new watcher while the old one holds --out's lock)`);
    report.expect(!once, `${id}: --once in a Deployment exits after one pass and is restarted forever: use the CronJob`);
  } else if (obj.kind === 'CronJob') {
    report.expect(once, `${id}: a watch CronJob must pass --once (without it a run never ends)`);
    report.expect(obj.spec.concurrencyPolicy === 'Forbid',
      `${id}: concurrencyPolicy must be Forbid (two runs on one --out: the second exits 2)`);
    const job = obj.spec.jobTemplate?.spec ?? {};
    report.expect(spec.restartPolicy === 'Never', `${id}: restartPolicy must be Never (podFailurePolicy needs it)`);
    const rules = job.podFailurePolicy?.rules ?? [];
    const exitRule = (code) => rules.find((r) => r.onExitCodes?.operator === 'In' && r.onExitCodes.values.includes(code));
    report.expect(exitRule(2)?.action === 'FailJob', `${id}: exit code 2 (bad input, or --out held by another watcher) must FailJob`);
  } else {
    report.fail(`${id}: watch runs as a Deployment or a CronJob, not a ${obj.kind}`);
    return;
  }
  const out = flags.get('out')?.[0] ?? '';
  const outMount = mountOf(out);
  report.expect(outMount && !outMount.readOnly && volumeOf(outMount)?.persistentVolumeClaim,
    `${id}: --out ${out} must be on a writable PersistentVolumeClaim (its watch.jsonl is the state across restarts)`);
  for (const name of ['dataset', 'checkpoints-dir']) {
    const path = flags.get(name)?.[0];
    report.expect(path && mountOf(`${path}/`), `${id}: --${name} ${path} is not on a mounted volume`);
  }
  checkGraderTarget(report, id, obj, flags.get('grader')?.[0] ?? '', refs, graders);
}

const KUEUE_QUEUE = 'kueue.x-k8s.io/queue-name';
const KUEUE_PRIORITY = 'kueue.x-k8s.io/priority-class';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * Kueue: a Job labelled with a queue is created suspended (Kueue admits it by unsuspending it;
 * an unsuspended one starts before admission, outside the quota), the label names a valid
 * LocalQueue, sits on the Job itself (Kueue ignores pod-template labels of a Job), and a
 * priority class comes with a queue.
 */
function checkKueue(report, objects, label) {
  for (const obj of objects.filter((o) => o.kind === 'Job')) {
    const id = `${label}: Job/${obj.metadata?.name}`;
    const labels = obj.metadata?.labels ?? {};
    const queue = labels[KUEUE_QUEUE];
    const podLabels = podLabelsOf(obj);
    report.expect(!(KUEUE_QUEUE in podLabels) || queue,
      `${id}: ${KUEUE_QUEUE} is on the pod template only; Kueue reads it from the Job's own labels`);
    if (KUEUE_PRIORITY in labels) {
      report.expect(queue, `${id}: ${KUEUE_PRIORITY} needs ${KUEUE_QUEUE} (Kueue ignores unqueued Jobs)`);
    }
    if (queue === undefined) continue;
    report.expect(DNS_LABEL.test(String(queue)), `${id}: ${KUEUE_QUEUE} '${queue}' is not a valid LocalQueue name`);
    report.expect(obj.spec?.suspend === true,
      `${id}: a Job queued in Kueue (${KUEUE_QUEUE}) must be created with suspend: true, or it starts before admission`);
  }
}

/**
 * `run --policy NAME=MODEL@URL`: one shard (a checkpoint's replies are one file), and URL names a
 * Service of the same namespace (http://SERVICE:PORT/...) whose port reaches a serving pod.
 */
function checkPolicies(report, id, obj, policies, refs) {
  if (!policies.length) return;
  report.expect(obj.spec.completions === 1, `${id}: run --policy samples the replies in one pod: completions must be 1`);
  for (const p of policies) {
    const m = String(p).match(/^[A-Za-z0-9._-]+=[^=@]+@https?:\/\/([a-z0-9-]+)(?::(\d+))?(\/\S*)?$/);
    if (!report.expect(m, `${id}: --policy ${p} must be NAME=MODEL@http://SERVICE:PORT/PATH`)) continue;
    const svc = find(refs, 'Service', m[1]);
    if (!report.expect(svc, `${id}: --policy names Service ${m[1]}, which is not defined`)) continue;
    const sp = (svc.spec.ports ?? []).find((x) => x.port === Number(m[2] ?? 80));
    report.expect(sp, `${id}: Service ${m[1]} has no port ${m[2] ?? 80}`);
    const pods = containersOf(refs).filter((x) => x.obj.kind === 'Deployment' && matches(svc.spec.selector, podLabelsOf(x.obj)));
    report.expect(pods.some(({ c }) => (c.ports ?? []).some((cp) => cp.name === sp?.targetPort || cp.containerPort === sp?.targetPort)),
      `${id}: Service ${m[1]} port ${m[2] ?? 80} reaches no serving container`);
  }
}

/** When the simulator is deployed, the graders point at it and its ports agree. */
function checkSimulator(report, objects, refs, label) {
  for (const { obj, c } of containersOf(objects).filter((x) => x.image === 'hb-llm-sim')) {
    const id = `${label}: ${obj.kind}/${obj.metadata.name} container ${c.name}`;
    const port = portOf(parseArgs(c.args).flags.get('listen')?.[0]);
    report.expect((c.ports ?? []).some((p) => p.containerPort === port), `${id}: no containerPort for --listen port ${port}`);
    const svc = objects.find((s) => s.kind === 'Service' && matches(s.spec?.selector, podLabelsOf(obj)));
    if (!report.expect(svc, `${id}: no Service selects the simulator`)) continue;
    for (const g of containersOf(objects).filter((x) => x.image === 'hb-grader')) {
      const url = expand(objects, g.c, parseArgs(g.c.args).flags.get('llm-base-url')?.[0]);
      report.expect(url === `http://${svc.metadata.name}:${svc.spec.ports[0].port}/v1`,
        `${id}: the graders' --llm-base-url is ${url}, not the simulator Service`);
    }
  }
}

/** A NetworkPolicy peer's podSelector (matchLabels and In/NotIn/Exists/DoesNotExist) matches `labels`. */
function selectorMatches(sel, labels) {
  if (!sel) return false;
  if (!matches(sel.matchLabels ?? {}, labels)) return false;
  return (sel.matchExpressions ?? []).every((e) => {
    const has = e.key in labels;
    if (e.operator === 'In') return has && (e.values ?? []).includes(labels[e.key]);
    if (e.operator === 'NotIn') return !has || !(e.values ?? []).includes(labels[e.key]);
    if (e.operator === 'Exists') return has;
    if (e.operator === 'DoesNotExist') return !has;
    return false;
  });
}

/** Is `--grader` (its first value) the in-process grader: absent (the default) or "embedded"? */
function embeddedGrader(flags) {
  const g = flags.get('grader')?.[0];
  return !g || g === 'embedded';
}

/** Does container `x` (of containersOf) call the judge itself, i.e. grade with an embedded grader? */
function callsJudge({ c, image }) {
  const { sub, flags } = parseArgs(c.args);
  const embedded = embeddedGrader(flags);
  if (image === 'hb-grader') return true;
  if (image === 'hb-env') return embedded;
  return image === 'hb-orchestrator' && !c.command && ['run', 'watch', 'meta-eval'].includes(sub) && embedded;
}

/**
 * The fleet quota (components/quota): Redis keeps its password out of every command line and
 * has probes; when a Redis Service exists, every process that calls the judge itself passes
 * --quota-redis to it with --quota-redis-password-file in the Secret Redis reads, and Redis's
 * NetworkPolicy admits it from this namespace only; a process with a gRPC --grader must not pass
 * --quota-redis (it exits 2: the graders make its upstream calls).
 */
function checkQuota(report, objects, refs, label) {
  const redis = containersOf(refs).filter((x) => x.image === 'redis');
  for (const { obj, spec, c } of containersOf(objects).filter((x) => x.image === 'redis')) {
    const id = `${label}: ${obj.kind}/${obj.metadata.name} container ${c.name}`;
    report.expect(c.readinessProbe && c.livenessProbe, `${id}: Redis needs a readinessProbe and a livenessProbe`);
    const argv = [...(c.command ?? []), ...(c.args ?? [])].map(String).join('\n');
    report.expect(!/--requirepass\b/.test(argv),
      `${id}: --requirepass puts the password on Redis's command line; read it from the Secret file into the config on stdin`);
    const files = [...argv.matchAll(/requirepass\s+\$\(cat\s+(\S+)\)/g)].map((m) => m[1]);
    report.expect(files.length === 1 && secretOfFile(spec, c, files[0]),
      `${id}: Redis must set requirepass from $(cat FILE) of a mounted Secret volume`);
    const labels = podLabelsOf(obj);
    const np = refs.find((n) => n.kind === 'NetworkPolicy' && matches(n.spec?.podSelector?.matchLabels, labels));
    if (report.expect(np, `${id}: no NetworkPolicy selects the Redis pods`)) {
      const peers = (np.spec.ingress ?? []).map((r) => r.from ?? []);
      report.expect(peers.length && peers.every((from) => from.length && from.every((f) => f.podSelector && !f.namespaceSelector &&
        (Object.keys(f.podSelector.matchLabels ?? {}).length || (f.podSelector.matchExpressions ?? []).length))),
      `${id}: NetworkPolicy ${np.metadata.name} must admit only pods of this namespace chosen by label (a non-empty podSelector, no namespaceSelector)`);
    }
  }
  const services = refs.filter((s) => s.kind === 'Service' && redis.some((x) => matches(s.spec?.selector, podLabelsOf(x.obj))));
  for (const x of containersOf(objects).filter((y) => BINARIES[y.image])) {
    const { obj, spec, c } = x;
    const id = `${label}: ${obj.kind}/${obj.metadata.name} container ${c.name}`;
    const { flags } = parseArgs(c.args);
    const url = flags.get('quota-redis')?.[0];
    if (services.length && callsJudge(x)) {
      report.expect(url, `${id}: calls the judge but has no --quota-redis while the fleet quota is on (Service ${services[0].metadata.name}): it would ignore the shared budget`);
    }
    if (!url) continue;
    report.expect(embeddedGrader(flags),
      `${id}: --quota-redis with a gRPC --grader (${flags.get('grader')?.[0]}): the process exits 2; the graders make its upstream calls, so only they take --quota-redis`);
    const m = String(url).match(/^redis:\/\/([^/@]*@)?([a-z0-9-]+):(\d+)(\/\d+)?$/);
    if (!report.expect(m, `${id}: --quota-redis ${url} must be redis://SERVICE:PORT[/DB] (the password from --quota-redis-password-file)`)) continue;
    report.expect(!m[1], `${id}: --quota-redis has a password in the URL: it must never be on a command line; use --quota-redis-password-file`);
    const file = flags.get('quota-redis-password-file')?.[0];
    const secret = secretOfFile(spec, c, file);
    report.expect(secret, `${id}: --quota-redis-password-file ${file} is not a file of a mounted Secret volume`);
    const svc = services.find((s) => s.metadata.name === m[2] && (s.spec.ports ?? []).some((p) => p.port === Number(m[3])));
    if (!report.expect(svc, `${id}: --quota-redis names ${m[2]}:${m[3]}, which is not a Service port of a Redis pod`)) continue;
    const server = redis.find((r) => matches(svc.spec.selector, podLabelsOf(r.obj)));
    const serverFile = [...[...(server.c.command ?? []), ...(server.c.args ?? [])].join('\n').matchAll(/requirepass\s+\$\(cat\s+(\S+)\)/g)][0]?.[1];
    const serverSecret = secretOfFile(server.spec, server.c, serverFile);
    report.expect(!secret || secret === serverSecret,
      `${id}: --quota-redis-password-file is from Secret ${secret}, but Redis reads its password from Secret ${serverSecret}`);
    const np = refs.find((n) => n.kind === 'NetworkPolicy' && matches(n.spec?.podSelector?.matchLabels, podLabelsOf(server.obj)));
    report.expect(!np || (np.spec.ingress ?? []).some((r) => (r.from ?? []).some((f) => !f.namespaceSelector && selectorMatches(f.podSelector, podLabelsOf(obj)))),
      `${id}: the NetworkPolicy ${np?.metadata?.name} of Redis does not admit these pods (labels ${JSON.stringify(podLabelsOf(obj))})`);
  }
}

// ------------------------------------------------------------------------------------------
// Flags against the binaries.

/** Every flag passed to one of our binaries exists in its --helpfull; env names agree. */
export function checkFlags(report, objects, binDir, label, helpCache = new Map()) {
  for (const { obj, c, image } of containersOf(objects)) {
    if (!BINARIES[image] || c.command) continue;  // `command` replaces the binary (loader pod)
    const id = `${label}: ${obj.kind}/${obj.metadata.name} container ${c.name}`;
    const { sub, flags } = parseArgs(c.args);
    const bin = join(binDir, BINARIES[image]);
    const key = `${bin} ${sub ?? ''}`;
    if (!helpCache.has(key)) helpCache.set(key, helpFlags(bin, image === 'hb-orchestrator' ? sub : null));
    const help = helpCache.get(key);
    if (!report.expect(!help.error, `${id}: ${help.error}`)) continue;
    for (const name of flags.keys()) {
      report.expect(help.flags.has(name.replace(/-/g, '_')), `${id}: ${image}${sub ? ` ${sub}` : ''} has no flag --${name}`);
    }
    // Env vars the container sets for the binary itself (not only for $(VAR) expansion).
    const used = new Set((c.args ?? []).flatMap((a) => [...String(a).matchAll(/\$\((\w+)\)/g)].map((m) => m[1])));
    const binText = readFileSync(bin).toString('latin1');
    for (const e of c.env ?? []) {
      if (e.name === 'JOB_COMPLETION_INDEX' || !used.has(e.name)) {
        report.expect(binText.includes(e.name), `${id}: env ${e.name} is set, but ${image} never mentions it`);
      }
    }
  }
}

/** The binaries read the env names the deployment relies on. */
export function checkBinaryEnvNames(report, binDir) {
  const expectations = [
    ['hb-orchestrator', 'JOB_COMPLETION_INDEX', 'default --shard-index of Indexed Jobs'],
    ['hb-grader', 'OPENAI_API_KEY', 'API key when --llm-api-key-file is not given (deploy/README.md)'],
  ];
  for (const [image, env, why] of expectations) {
    const bin = join(binDir, BINARIES[image]);
    if (!report.expect(existsSync(bin), `${bin} does not exist (build it first)`)) continue;
    report.expect(readFileSync(bin).toString('latin1').includes(env), `${image} does not read ${env} (${why})`);
  }
}

// ------------------------------------------------------------------------------------------
// Entry points.

function overlayDirs() {
  const root = join(K8S_DIR, 'overlays');
  return readdirSync(root).sort().map((n) => ({ name: n, dir: join(root, n) }));
}

/** Renders every overlay (and a render-job.sh sample): {name: objects}. */
function renderAll(models) {
  const rendered = {};
  for (const { name, dir } of overlayDirs()) rendered[name] = renderOverlay(models.yaml, dir);
  return rendered;
}

function checkRenderJob(report, models) {
  const script = join(K8S_DIR, 'render-job.sh');
  // The example overlays hold render-job.sh outputs: they must be current.
  for (const [overlay, expected] of [['grade-example', 2], ['policy-example', 1], ['queue-example', 1]]) {
    const example = join(K8S_DIR, 'overlays', overlay);
    const kust = readFileSync(join(example, 'kustomization.yaml'), 'utf8');
    const commands = [...kust.matchAll(/^#\s+deploy\/k8s\/render-job\.sh (.+) > (\S+)$/gm)];
    report.expect(commands.length === expected, `${overlay}/kustomization.yaml documents ${commands.length} render commands, expected ${expected}`);
    for (const [, argText, file] of commands) {
      const r = run('bash', [script, ...argText.trim().split(/\s+/)]);
      report.expect(r.status === 0, `render-job.sh ${argText} failed: ${r.stderr}`);
      const current = existsSync(join(example, file)) ? readFileSync(join(example, file), 'utf8') : '';
      report.expect(r.stdout === current, `overlays/${overlay}/${file} is stale: re-run render-job.sh ${argText} > ${file}`);
    }
  }
  // Bad usage exits 2 with a message and renders nothing.
  const bad = [
    [['Ckpt', 'r.jsonl'], 'lowercase'],
    [['ckpt', '/etc/passwd'], 'under /inputs'],
    [['ckpt', '../x.jsonl'], 'under /inputs'],
    [['--shards', '0', 'ckpt', 'r.jsonl'], 'positive integer'],
    [['--shards', '2', '--parallelism', '3', 'ckpt', 'r.jsonl'], 'exceeds'],
    [['ckpt'], 'expected CHECKPOINT RESPONSES_PATH'],
    [['--policy-url', 'http://p:8000/v1', 'ckpt'], 'go together'],
    [['--policy-url', 'http://p:8000/v1', '--policy-model', 'm', 'ckpt', 'r.jsonl'], 'only CHECKPOINT'],
    [['--policy-url', 'http://p:8000/v1', '--policy-model', 'm', '--shards', '2', 'ckpt'], 'must be 1'],
    [['--policy-url', 'http://p|x', '--policy-model', 'm', 'ckpt'], 'http(s)://HOST'],
    [['--policy-url', 'http://p:8000/v1', '--policy-model', 'a@b', 'ckpt'], "no '=' or '@'"],
    [['--queue', 'Team_A', 'ckpt', 'r.jsonl'], 'must be a LocalQueue name'],
    [['--priority-class', 'low', 'ckpt', 'r.jsonl'], 'needs --queue'],
    [['--queue', 'team-a', '--priority-class', 'Low', 'ckpt', 'r.jsonl'], 'WorkloadPriorityClass name'],
  ];
  for (const [args, msg] of bad) {
    const r = run('bash', [script, ...args]);
    report.expect(r.status === 2 && r.stderr.includes(msg) && r.stdout === '',
      `render-job.sh ${args.join(' ')}: expected exit 2 and "${msg}", got ${r.status}: ${r.stderr.trim()}`);
  }
  // A different shape renders to valid objects that keep the house rules.
  // An all-digit (or 1e3-like) name must stay a string label, not become a YAML number.
  const r = run('bash', [script, '--shards', '3', '--parallelism', '2', '--max-in-flight', '16', '1e3', '/inputs/r/1e3.jsonl']);
  if (report.expect(r.status === 0, `render-job.sh sample failed: ${r.stderr}`)) {
    const objects = parseDocs(models.yaml, r.stdout, 'render-job.sh sample');
    report.expect(objects.length === 1 && objects[0].spec.completions === 3 && objects[0].spec.parallelism === 2,
      'render-job.sh sample: expected one 3-shard grading Job with parallelism 2 (it merges by itself)');
    return objects;
  }
  return [];
}

function main(argv) {
  let modules = null;
  let bins = null;
  const modes = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--modules') modules = argv[++i];
    else if (argv[i] === '--binaries') bins = argv[++i];
    else modes.push(argv[i]);
  }
  if (!modules || modes.length !== 1 || !['k8s', 'flags', 'selftest'].includes(modes[0])) {
    console.error('usage: node validate.mjs --modules DIR [--binaries DIR] k8s|flags|selftest');
    return 2;
  }
  if (!existsSync(join(modules, 'node_modules', 'kubernetes-models'))) {
    console.error(`validate: ${modules}/node_modules has no kubernetes-models: run npm ci there first`);
    return 2;
  }
  const models = loadModules(modules);
  const mode = modes[0];
  const report = new Report(`deploy ${mode}`);
  let rendered;
  try {
    rendered = renderAll(models);
  } catch (e) {
    report.fail(e.message);
    return report.finish();
  }
  const refsOf = (name) => [...rendered[name], ...(COMPANIONS[name] ? rendered[COMPANIONS[name]] : [])];
  const standalone = listFiles(join(K8S_DIR, 'jobs'), ['.yaml']).map((f) => ({
    name: `jobs/${basename(f)}`, objects: parseDocs(models.yaml, readFileSync(f, 'utf8'), f),
  }));

  if (mode === 'k8s') {
    for (const [name, objects] of Object.entries(rendered)) {
      checkSchemas(report, models, objects, name);
      checkHouseRules(report, objects, refsOf(name), name);
    }
    for (const { name, objects } of standalone) {
      checkSchemas(report, models, objects, name);
      checkHouseRules(report, objects, [...objects, ...rendered.prod], name);
    }
    const sample = checkRenderJob(report, models);
    checkSchemas(report, models, sample, 'render-job.sh sample');
    checkHouseRules(report, sample, [...sample, ...rendered.prod], 'render-job.sh sample');
  } else if (mode === 'flags') {
    const dir = binaryDir(bins);
    if (!dir) {
      report.fail('set HB_BINARY_DIR (or --binaries) to the build folder holding the binaries');
      return report.finish();
    }
    const cache = new Map();
    for (const [name, objects] of Object.entries(rendered)) checkFlags(report, objects, dir, name, cache);
    for (const { name, objects } of standalone) checkFlags(report, objects, dir, name, cache);
    checkBinaryEnvNames(report, dir);
  } else {
    return selftest(models, rendered);
  }
  return report.finish();
}

// ------------------------------------------------------------------------------------------
// Self-test: every rule must reject the mistake it exists for.

function selftest(models, rendered) {
  const report = new Report('deploy selftest');
  const clone = (x) => structuredClone(x);
  const grader = (objs) => objs.find((o) => o.kind === 'Deployment' && o.metadata.name === 'hb-grader');
  const gc = (objs) => grader(objs).spec.template.spec.containers[0];
  const gradeJob = (objs) => objs.find((o) => o.kind === 'Job' && o.metadata.name.startsWith('hb-grade-'));
  const watchOf = (objs) => objs.find((o) => o.kind === 'Deployment' && o.metadata.name === 'hb-watch');
  const cronOf = (objs) => objs.find((o) => o.kind === 'CronJob');
  const cronPod = (objs) => cronOf(objs).spec.jobTemplate.spec.template.spec;
  const netpol = (objs, name) => objs.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === name);
  const envC = (objs) => objs.find((o) => o.kind === 'Deployment' && o.metadata.name === 'hb-env').spec.template.spec.containers[0];
  const quotaOf = (objs) => objs.find((o) => o.kind === 'Deployment' && o.metadata.name === 'hb-quota');
  const quotaC = (objs) => quotaOf(objs).spec.template.spec.containers[0];
  const setArg = (c, name, value) => {
    c.args = c.args.map((a) => (a.startsWith(`--${name}=`) ? `--${name}=${value}` : a));
  };
  const cases = [
    ['prod', 'misspelt field', (o) => { const c = gc(o); c.readinesProbe = c.readinessProbe; delete c.readinessProbe; }, 'unknown field'],
    ['prod', 'wrong type', (o) => { gc(o).ports[0].containerPort = '50051'; }, 'must be integer'],
    ['prod', 'probe on another port', (o) => { gc(o).readinessProbe.grpc.port = 50052; }, 'readinessProbe must be a native grpc probe'],
    ['prod', '--listen moved', (o) => { setArg(gc(o), 'listen', '0.0.0.0:6000'); }, '!= --listen port 6000'],
    ['prod', 'scrape port', (o) => { grader(o).spec.template.metadata.annotations['prometheus.io/port'] = '9000'; }, 'prometheus.io/port'],
    ['prod', 'grace too short', (o) => { setArg(gc(o), 'drain-timeout', '1m'); }, 'terminationGracePeriodSeconds 45 < preStop 5s + --drain-timeout 60s'],
    ['prod', 'no preStop', (o) => { delete gc(o).lifecycle; }, 'preStop must sleep'],
    ['prod', 'root', (o) => { grader(o).spec.template.spec.securityContext.runAsNonRoot = false; }, 'runAsNonRoot'],
    ['prod', 'writable rootfs', (o) => { gc(o).securityContext.readOnlyRootFilesystem = false; }, 'readOnlyRootFilesystem'],
    ['prod', 'caps kept', (o) => { gc(o).securityContext.capabilities.drop = ['NET_RAW']; }, 'drop ALL'],
    ['prod', 'no limits', (o) => { delete gc(o).resources.limits; }, 'resources.limits.cpu is missing'],
    ['prod', 'undefined $(VAR)', (o) => { gc(o).env = gc(o).env.filter((e) => e.name !== 'HB_LLM_MODEL'); }, 'uses $(HB_LLM_MODEL)'],
    ['prod', 'missing ConfigMap key', (o) => { delete o.find((x) => x.kind === 'ConfigMap').data.HB_LOG_LEVEL; }, 'has no key HB_LOG_LEVEL'],
    ['prod', 'grader without auth', (o) => { const c = gc(o); c.args = c.args.filter((a) => !a.startsWith('--auth-token-file=')); }, 'hb-grader refuses to start'],
    ['prod', 'env http without auth', (o) => { const c = o.find((x) => x.kind === 'Deployment' && x.metadata.name === 'hb-env').spec.template.spec.containers[0]; c.args = c.args.filter((a) => !a.startsWith('--auth-token-file=')); }, '--http-listen is not loopback'],
    ['prod', 'token file outside the Secret', (o) => { setArg(gc(o), 'auth-token-file', '/etc/tokens'); }, '--auth-token-file /etc/tokens is not a file of a mounted Secret'],
    ['grade-example', 'job sends no token', (o) => { const c = gradeJob(o).spec.template.spec.containers[0]; c.args = c.args.filter((a) => !a.startsWith('--grader-token-file=')); }, '--grader-token-file must be a file'],
    ['prod', 'key file outside the Secret', (o) => { setArg(gc(o), 'llm-api-key-file', '/etc/key'); }, 'is not a file of a mounted Secret'],
    ['prod', 'replicas vs HPA', (o) => { grader(o).spec.replicas = 3; }, 'fights the autoscaler'],
    ['prod', 'service not headless', (o) => { delete o.find((x) => x.kind === 'Service' && x.metadata.name === 'hb-grader-headless').spec.clusterIP; }, 'no headless Service'],
    ['prod', 'netpol open', (o) => { netpol(o, 'hb-grader').spec.ingress[0].from.push({ namespaceSelector: {} }); }, 'undeclared source'],
    ['prod', 'netpol metrics from anywhere', (o) => { netpol(o, 'hb-grader').spec.ingress[1].from = [{ podSelector: {} }]; }, 'monitoring namespace only'],
    ['prod', 'env netpol without http', (o) => { netpol(o, 'hb-env').spec.ingress[0].ports.pop(); }, 'admits nothing to the http port 8080'],
    ['prod', 'env netpol open', (o) => { netpol(o, 'hb-env').spec.ingress[0].from.push({ podSelector: {} }); }, 'the http port is admitted from an undeclared source'],
    ['prod', 'env http moved', (o) => { setArg(o.find((x) => x.kind === 'Deployment' && x.metadata.name === 'hb-env').spec.template.spec.containers[0], 'http-listen', '0.0.0.0:9090'); }, 'containerPort "http" (8080) != its flag\'s port 9090'],
    ['prod', 'env service without http', (o) => { const s = o.find((x) => x.kind === 'Service' && x.metadata.name === 'hb-env'); s.spec.ports = s.spec.ports.filter((p) => p.name !== 'http'); }, 'needs a port named http'],
    ['prod', 'pdb selects nothing', (o) => { o.find((x) => x.kind === 'PodDisruptionBudget').spec.selector.matchLabels = { app: 'x' }; }, 'selector matches no pod template'],
    ['grade-example', 'exit 2 retried', (o) => { gradeJob(o).spec.podFailurePolicy.rules.shift(); }, 'exit code 2'],
    ['grade-example', 'exit 4 counted', (o) => { gradeJob(o).spec.podFailurePolicy.rules.splice(1, 1); }, 'exit code 4'],
    ['grade-example', 'shard count', (o) => { gradeJob(o).spec.completions = 9; }, '--shard-count 8 != completions 9'],
    ['grade-example', 'out per shard', (o) => { setArg(gradeJob(o).spec.template.spec.containers[0], 'out', '/results/x/shard-$(JOB_COMPLETION_INDEX)'); }, 'not per shard'],
    ['grade-example', 'no self-merge', (o) => { const c = gradeJob(o).spec.template.spec.containers[0]; c.args = c.args.filter((a) => a !== '--merge-when-complete'); }, 'must merge by itself'],
    ['grade-example', 'grader typo', (o) => { setArg(gradeJob(o).spec.template.spec.containers[0], 'grader', 'dns:///hb-grader:50051'); }, 'Service hb-grader, which is not defined'],
    ['grade-example', 'job labels not admitted', (o) => { gradeJob(o).spec.template.metadata.labels['app.kubernetes.io/name'] = 'x'; }, 'does not admit this Job'],
    ['grade-example', 'suspended merge Job', (o) => { const m = clone(gradeJob(o)); m.metadata.name = 'hb-merge-x'; m.spec = { suspend: true, podFailurePolicy: m.spec.podFailurePolicy, template: m.spec.template }; m.spec.template.spec.containers[0].args = ['merge', '--out=/results/x/merged', '/results/x/shard-0']; o.push(m); }, 'not as a suspended Job a person must start'],
    ['grade-example', 'pvc missing', (o) => { gradeJob(o).spec.template.spec.volumes[1].persistentVolumeClaim.claimName = 'nope'; }, 'PersistentVolumeClaim nope is not defined'],
    ['policy-example', 'policy service typo', (o) => { const c = gradeJob(o).spec.template.spec.containers[0]; c.args = c.args.map((a) => a.replace('@http://hb-policy-ckpt-0300:', '@http://hb-policy:')); }, 'Service hb-policy, which is not defined'],
    ['policy-example', 'policy sharded', (o) => { gradeJob(o).spec.completions = 2; }, 'completions must be 1'],
    ['policy-example', 'policy service port', (o) => { o.find((x) => x.kind === 'Service').spec.ports[0].targetPort = 'web'; }, 'reaches no serving container'],
    ['watch-example', 'two watchers', (o) => { watchOf(o).spec.replicas = 2; }, 'must have replicas: 1'],
    ['watch-example', 'rolling update', (o) => { watchOf(o).spec.strategy = { type: 'RollingUpdate' }; }, 'strategy Recreate'],
    ['watch-example', 'watch --once forever', (o) => { watchOf(o).spec.template.spec.containers[0].args.push('--once'); }, 'use the CronJob'],
    ['watch-example', 'state on a read-only volume', (o) => { watchOf(o).spec.template.spec.containers[0].volumeMounts[1].readOnly = true; }, 'must be on a writable PersistentVolumeClaim'],
    ['watch-example', 'watch unmounted checkpoints', (o) => { setArg(watchOf(o).spec.template.spec.containers[0], 'checkpoints-dir', '/data/ckpts'); }, '--checkpoints-dir /data/ckpts is not on a mounted volume'],
    ['watch-example', 'watch grader typo', (o) => { setArg(watchOf(o).spec.template.spec.containers[0], 'grader', 'dns:///hb-grader:50051'); }, 'Service hb-grader, which is not defined'],
    ['watch-cron-example', 'cron without --once', (o) => { const c = cronPod(o).containers[0]; c.args = c.args.filter((a) => a !== '--once'); }, 'must pass --once'],
    ['watch-cron-example', 'cron runs overlap', (o) => { cronOf(o).spec.concurrencyPolicy = 'Allow'; }, 'concurrencyPolicy must be Forbid'],
    ['watch-cron-example', 'cron retries exit 2', (o) => { cronOf(o).spec.jobTemplate.spec.podFailurePolicy.rules.shift(); }, 'exit code 2'],
    ['watch-cron-example', 'cron pod root', (o) => { cronPod(o).securityContext.runAsNonRoot = false; }, 'runAsNonRoot'],
    ['queue-example', 'queued but not suspended', (o) => { delete gradeJob(o).spec.suspend; }, 'must be created with suspend: true'],
    ['queue-example', 'priority without a queue', (o) => { delete gradeJob(o).metadata.labels['kueue.x-k8s.io/queue-name']; }, 'needs kueue.x-k8s.io/queue-name'],
    ['queue-example', 'queue name invalid', (o) => { gradeJob(o).metadata.labels['kueue.x-k8s.io/queue-name'] = 'Team_A'; }, 'is not a valid LocalQueue name'],
    ['queue-example', 'queue label on the pods only', (o) => { const j = gradeJob(o); j.spec.template.metadata.labels['kueue.x-k8s.io/queue-name'] = 'team-a'; delete j.metadata.labels['kueue.x-k8s.io/queue-name']; delete j.metadata.labels['kueue.x-k8s.io/priority-class']; }, 'on the pod template only'],
    ['quota-example', 'grader off the quota', (o) => { const c = gc(o); c.args = c.args.filter((a) => !a.startsWith('--quota-redis=')); }, 'calls the judge but has no --quota-redis'],
    ['quota-example', 'embedded hb-env off the quota', (o) => { const c = envC(o); c.args = c.args.filter((a) => !/^--grader(-token-file)?=/.test(a)); }, 'calls the judge but has no --quota-redis'],
    ['quota-example', 'hb-env --grader=embedded off the quota', (o) => { setArg(envC(o), 'grader', 'embedded'); }, 'calls the judge but has no --quota-redis'],
    ['quota-interactive-example', 'embedded hb-env off the quota', (o) => { const c = envC(o); c.args = c.args.filter((a) => !a.startsWith('--quota-redis=')); }, 'calls the judge but has no --quota-redis'],
    ['quota-interactive-example', 'embedded hb-env without the password', (o) => { const c = envC(o); c.volumeMounts = c.volumeMounts.filter((m) => m.name !== 'quota-password'); }, 'is not a file of a mounted Secret'],
    ['quota-example', 'quota with a gRPC grader', (o) => { envC(o).args.push('--quota-redis=redis://hb-quota:6379'); }, 'the process exits 2'],
    ['quota-example', 'quota password not mounted', (o) => { const c = gc(o); c.volumeMounts = c.volumeMounts.filter((m) => m.name !== 'quota-password'); }, '--quota-redis-password-file /var/run/secrets/healthbench/quota/password is not a file of a mounted Secret'],
    ['prod', 'quota flag without its Secret', (o) => { gc(o).args.push('--quota-redis=redis://hb-quota:6379'); }, '--quota-redis-password-file undefined is not a file of a mounted Secret'],
    ['quota-example', 'quota password in the URL', (o) => { setArg(gc(o), 'quota-redis', 'redis://:hunter2@hb-quota:6379'); }, 'has a password in the URL'],
    ['quota-example', 'quota service typo', (o) => { setArg(gc(o), 'quota-redis', 'redis://redis:6379'); }, 'names redis:6379, which is not a Service port of a Redis pod'],
    ['quota-example', 'quota password of another Secret', (o) => { grader(o).spec.template.spec.volumes.find((v) => v.name === 'quota-password').secret.secretName = 'hb-auth-token'; }, 'but Redis reads its password from Secret hb-quota-redis'],
    ['quota-example', 'redis as root', (o) => { quotaOf(o).spec.template.spec.securityContext.runAsNonRoot = false; }, 'runAsNonRoot'],
    ['quota-example', 'redis without readiness', (o) => { delete quotaC(o).readinessProbe; }, 'Redis needs a readinessProbe and a livenessProbe'],
    ['quota-example', 'redis password on its command line', (o) => { quotaC(o).args = ['exec redis-server --requirepass hunter2']; }, '--requirepass puts the password'],
    ['quota-example', 'redis netpol from anywhere', (o) => { netpol(o, 'hb-quota').spec.ingress[0].from.push({ namespaceSelector: {} }); }, 'must admit only pods of this namespace'],
    ['quota-example', 'redis netpol shuts the graders out', (o) => { netpol(o, 'hb-quota').spec.ingress[0].from[0].podSelector.matchExpressions[0].values = ['hb-env']; }, 'of Redis does not admit these pods'],
    ['capacity-test', 'graders not on the simulator', (o) => { o.find((x) => x.kind === 'ConfigMap' && x.metadata.name.startsWith('hb-grader-config')).data.HB_LLM_BASE_URL = 'https://api.openai.com/v1'; }, 'not the simulator Service'],
  ];
  for (const [overlay, what, mutate, expected] of cases) {
    const objects = clone(rendered[overlay]);
    const companion = COMPANIONS[overlay] ? rendered[COMPANIONS[overlay]] : [];
    mutate(objects);
    const r = new Report('case');
    checkSchemas(r, models, objects, overlay);
    checkHouseRules(r, objects, [...objects, ...companion], overlay);
    report.expect(r.errors.some((e) => e.includes(expected)),
      `self-test "${what}": expected a finding containing "${expected}", got ${JSON.stringify(r.errors)}`);
  }
  // The pristine overlays pass (the same as `k8s`, so a rule that always fires is caught too).
  for (const [name, objects] of Object.entries(rendered)) {
    const r = new Report('pristine');
    checkSchemas(r, models, objects, name);
    checkHouseRules(r, objects, [...objects, ...(COMPANIONS[name] ? rendered[COMPANIONS[name]] : [])], name);
    report.expect(r.errors.length === 0, `self-test: pristine ${name} has findings: ${r.errors.join('; ')}`);
  }
  // The flag check rejects an unknown flag (against a fake binary's --helpfull).
  const fakeDir = join(process.env.TMPDIR || '/tmp', `hb-validate-${process.pid}`);
  run('mkdir', ['-p', join(fakeDir, 'grader_service')]);
  const fake = join(fakeDir, 'grader_service', 'hb-grader');
  run('sh', ['-c', `printf '#!/bin/sh\\necho "  Flags from main.cc:"\\necho "    --listen (address); default: \\\\"0.0.0.0:50051\\\\";"\\nexit 1\\n' > ${fake} && chmod +x ${fake}`]);
  const r = new Report('flags');
  checkFlags(r, rendered.prod.filter((o) => o.kind === 'Deployment'), fakeDir, 'prod');
  report.expect(r.errors.some((e) => e.includes('has no flag --metrics-listen')) && !r.errors.some((e) => e.includes('--listen ')),
    `self-test flags: expected only flags other than --listen to be missing, got ${JSON.stringify(r.errors)}`);
  run('rm', ['-rf', fakeDir]);
  return report.finish();
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = main(process.argv.slice(2));
}
