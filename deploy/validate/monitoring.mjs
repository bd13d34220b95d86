// Offline checks of deploy/monitoring/ (run by ctest, label "deploy"):
//
//   node monitoring.mjs --modules DIR check      render deploy/monitoring/k8s with `kubectl
//                                                 kustomize`; validate every object against the
//                                                 Prometheus Operator / KEDA schemas
//                                                 (@kubernetes-models/prometheus-operator, /keda),
//                                                 reject fields the CRDs do not have, and the
//                                                 house rules below
//   node monitoring.mjs --modules DIR selftest   each rule rejects the mistake it exists for
//
// House rules: the scrape jobs are named hb-grader, hb-env, hb-orchestrator (what the rules
// select on; a ScaledObject's Prometheus query selects one of them); every alert has a severity (critical|warning) and a runbook_url naming a section
// of docs/runbooks.md that exists.
// DIR holds node_modules/ from `npm ci` of deploy/validate/package-lock.json.
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Report, SOURCE_DIR, listFiles, run } from './lib.mjs';

const MONITORING_DIR = join(SOURCE_DIR, 'deploy', 'monitoring', 'k8s');
const RUNBOOKS = join(SOURCE_DIR, 'docs', 'runbooks.md');
const KUBECTL = process.env.KUBECTL || '/usr/bin/kubectl';
/** Kind -> the npm module (under DIR/node_modules) with its model. */
const MODELS = {
  'monitoring.coreos.com/v1/ServiceMonitor': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
  'monitoring.coreos.com/v1/PodMonitor': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
  'monitoring.coreos.com/v1/PrometheusRule': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
  'keda.sh/v1alpha1/ScaledObject': '@kubernetes-models/keda/keda.sh/v1alpha1',
};
const SCRAPE_JOBS = new Set(['hb-grader', 'hb-env', 'hb-orchestrator']);

/**
 * The fields of a CRD model, from its .d.ts (the CRD types are one nested interface there):
 * {field: subtree | true}, '*' for a map. The models validate types and enums but accept any
 * extra field, so a misspelt "podMetricsEndpoint" would pass without this.
 */
export function fieldTree(dtsText, kind) {
  const body = dtsText.split(`export interface I${kind} {`)[1];
  const root = {};
  const stack = [root];
  for (const raw of body.split('\n')) {
    const line = raw.trim();
    if (stack.length === 0) break;
    const field = line.match(/^"([^"]+)"\??: (.*)$/);
    const index = line.match(/^\[key: string\]: (.*)$/);
    if (field || index) {
      const name = field ? field[1] : '*';
      const rest = field ? field[2] : index[1];
      if (/\{$/.test(rest)) {
        const child = {};
        stack[stack.length - 1][name] = child;
        stack.push(child);
      } else {
        stack[stack.length - 1][name] = true;
      }
    } else if (/^\}/.test(line)) {
      stack.pop();
    }
  }
  return root;
}

function unknownFields(tree, value, path, out) {
  if (tree === true || value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    value.forEach((v, i) => unknownFields(tree, v, `${path}[${i}]`, out));
    return;
  }
  for (const [key, child] of Object.entries(value)) {
    const sub = tree[key] ?? tree['*'];
    if (sub === undefined) out.push(`${path}.${key}: unknown field`);
    else unknownFields(sub, child, `${path}.${key}`, out);
  }
}

function loadModels(modulesDir) {
  const require = createRequire(join(modulesDir, 'noop.js'));
  return {
    yaml: require('yaml'),
    check(obj) {
      const key = `${obj.apiVersion}/${obj.kind}`;
      const module = MODELS[key];
      if (!module) return [`kind ${key} is not in MODELS of monitoring.mjs`];
      const Cls = require(module)[obj.kind];
      const errors = [];
      try {
        new Cls(obj).validate();
      } catch (e) {
        errors.push(`schema: ${String(e.message).split('\n').slice(0, 5).join('; ')}`);
      }
      const dts = readFileSync(join(modulesDir, 'node_modules', module, `${obj.kind}.d.ts`), 'utf8');
      unknownFields(fieldTree(dts, obj.kind), obj, obj.kind, errors);
      return errors;
    },
  };
}

/** Anchors of docs/runbooks.md's headings (GitHub's rule: lower case, spaces to '-'). */
function runbookAnchors(text) {
  const anchors = new Set();
  for (const m of text.matchAll(/^#+ (.+)$/gm)) {
    anchors.add(m[1].trim().toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-'));
  }
  return anchors;
}

/** The house rules of one object (see the header); returns the findings. */
export function houseRules(obj, anchors) {
  const out = [];
  const spec = obj.spec ?? {};
  if (obj.kind === 'ServiceMonitor' || obj.kind === 'PodMonitor') {
    const name = spec.selector?.matchLabels?.[spec.jobLabel];
    if (!SCRAPE_JOBS.has(name)) {
      out.push(`jobLabel ${spec.jobLabel} selects ${name}: the scrape job must be one of ${[...SCRAPE_JOBS].join(', ')}`);
    }
  }
  if (obj.kind === 'ScaledObject') {
    for (const trigger of spec.triggers ?? []) {
      const query = trigger.metadata?.query ?? '';
      if (trigger.type === 'prometheus' && !/job="(hb-grader|hb-env)"/.test(query)) {
        out.push(`trigger query must select a scrape job (job="hb-grader" or "hb-env"): ${query}`);
      }
    }
  }
  if (obj.kind === 'PrometheusRule') {
    for (const group of spec.groups ?? []) {
      for (const rule of group.rules ?? []) {
        if (!rule.alert) continue;
        const severity = rule.labels?.severity;
        if (!['critical', 'warning'].includes(severity)) out.push(`${rule.alert}: severity must be critical or warning, got ${severity}`);
        const url = rule.annotations?.runbook_url ?? '';
        const m = url.match(/^docs\/runbooks\.md#([a-z0-9_-]+)$/);
        if (!m) out.push(`${rule.alert}: runbook_url must be docs/runbooks.md#<section>, got '${url}'`);
        else if (!anchors.has(m[1])) out.push(`${rule.alert}: docs/runbooks.md has no section #${m[1]}`);
      }
    }
  }
  return out;
}

/** The kustomization's objects, plus the opt-in ones under keda/ (applied by hand). */
function render(yaml) {
  const r = run(KUBECTL, ['kustomize', MONITORING_DIR]);
  if (r.status !== 0) throw new Error(`kubectl kustomize ${MONITORING_DIR} failed: ${r.stderr || r.error}`);
  const objects = yaml.parseAllDocuments(r.stdout).map((d) => d.toJS()).filter(Boolean);
  for (const file of listFiles(join(MONITORING_DIR, 'keda'), ['.yaml'])) {
    objects.push(...yaml.parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS()).filter(Boolean));
  }
  return objects;
}

function checkAll(report, models, objects, anchors) {
  for (const obj of objects) {
    const id = `${obj.kind}/${obj.metadata?.name}`;
    const findings = [...models.check(obj), ...houseRules(obj, anchors)];
    report.expect(findings.length === 0, `${id}: ${findings.join('; ')}`);
  }
}

function selftest(report, models, objects, anchors) {
  const pick = (kind) => structuredClone(objects.find((o) => o.kind === kind));
  const rejected = (name, obj) => {
    const findings = [...models.check(obj), ...houseRules(obj, anchors)];
    report.expect(findings.length > 0, `selftest: ${name} was not rejected`);
  };
  const typo = pick('PodMonitor');
  typo.spec.podMetricsEndpoints[0].intervall = '30s';
  rejected('a misspelt PodMonitor field', typo);
  const job = pick('ServiceMonitor');
  job.spec.selector.matchLabels[job.spec.jobLabel] = 'grader';
  rejected('a scrape job the rules do not select', job);
  const rules = pick('PrometheusRule');
  const alert = rules.spec.groups[0].rules.find((r) => r.alert);
  const noSeverity = structuredClone(rules);
  delete noSeverity.spec.groups[0].rules.find((r) => r.alert).labels.severity;
  rejected('an alert without severity', noSeverity);
  alert.annotations.runbook_url = 'docs/runbooks.md#no-such-section';
  rejected('a runbook_url to a missing section', rules);
  const badFor = pick('PrometheusRule');
  badFor.spec.groups[0].rules.find((r) => r.alert).for = 'five minutes';
  rejected('an alert `for` that is no duration', badFor);
  const scaled = objects.find((o) => o.kind === 'ScaledObject');
  report.expect(scaled, 'selftest: deploy/monitoring/k8s/keda holds a ScaledObject');
  if (scaled) {
    const bad = structuredClone(scaled);
    bad.spec.triggers[0].metadataa = bad.spec.triggers[0].metadata;
    rejected('a misspelt ScaledObject field', bad);
    const job = structuredClone(scaled);
    job.spec.triggers[0].metadata.query = 'sum(hb_grader_rpcs_in_flight)';
    rejected('a ScaledObject query without the scrape job', job);
  }
}

function main(argv) {
  const i = argv.indexOf('--modules');
  const modules = i >= 0 ? argv[i + 1] : null;
  const mode = argv.filter((a, j) => j !== i && j !== i + 1)[0];
  if (!modules || !['check', 'selftest'].includes(mode)) {
    console.error('usage: node monitoring.mjs --modules DIR check|selftest');
    return 2;
  }
  if (!existsSync(join(modules, 'node_modules', '@kubernetes-models', 'prometheus-operator'))) {
    console.error(`monitoring: ${modules}/node_modules has no @kubernetes-models/prometheus-operator: run npm ci there first`);
    return 2;
  }
  const models = loadModels(modules);
  const report = new Report(`deploy monitoring ${mode}`);
  try {
    const objects = render(models.yaml);
    const anchors = runbookAnchors(readFileSync(RUNBOOKS, 'utf8'));
    if (mode === 'check') checkAll(report, models, objects, anchors);
    else selftest(report, models, objects, anchors);
  } catch (e) {
    report.fail(e.message);
  }
  return report.finish();
}

process.exitCode = main(process.argv.slice(2));
