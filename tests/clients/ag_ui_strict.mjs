// Strict checks against @ag-ui/core's own schemas. The 1.0 schemas are "loose" (they keep fields they do
// not declare), so a parse alone cannot catch a misspelt or invented field: `undeclared` walks the value
// beside the schema and names every field the schema does not declare, except chatgate's documented
// additions (EXTENSIONS, by the declared object they sit in).
import { EventSchema, AgentCapabilitiesSchema, TokenUsageSchema } from "@ag-ui/core/schemas";

export { EventSchema, AgentCapabilitiesSchema };

// chatgate's documented addition: a run's cost on its first TokenUsage entry (docs/usage.md).
const EXTENSIONS = new Map([[TokenUsageSchema, new Set(["costUsd"])]]);

function def(schema) {
  return schema?._zod?.def;
}

// The declared object shape that matches `value` (unwrapping optional, nullable, default, lazy, pipe, unions).
function candidates(schema, value) {
  const d = def(schema);
  if (!d) return [];
  switch (d.type) {
    case "optional":
    case "nullable":
    case "default":
    case "readonly":
    case "nonoptional":
      return candidates(d.innerType, value);
    case "lazy":
      return candidates(d.getter(), value);
    case "pipe":
      return candidates(d.in, value);
    case "union":
      return d.options.flatMap((option) => (option.safeParse(value).success ? candidates(option, value) : []));
    default:
      return [schema];
  }
}

export function undeclared(schema, value, path = "") {
  const found = [];
  for (const candidate of candidates(schema, value).slice(0, 1)) {
    const d = def(candidate);
    if (d.type === "object" && value && typeof value === "object" && !Array.isArray(value)) {
      const allowed = EXTENSIONS.get(candidate) ?? new Set();
      for (const [key, item] of Object.entries(value)) {
        const field = d.shape[key];
        if (field === undefined) {
          if (!allowed.has(key)) found.push(`${path}${key}`);
        } else {
          found.push(...undeclared(field, item, `${path}${key}.`));
        }
      }
    } else if (d.type === "array" && Array.isArray(value)) {
      value.forEach((item, index) => found.push(...undeclared(d.element, item, `${path}${index}.`)));
    } else if (d.type === "record" && value && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) found.push(...undeclared(d.valueType, item, `${path}${key}.`));
    }
  }
  return found;
}

// Parse `value` with `schema`; return what is wrong (a rejection, or fields the schema does not declare).
export function strictProblems(schema, value) {
  const parsed = schema.safeParse(value);
  if (!parsed.success) return [`rejected: ${parsed.error.message}`];
  return undeclared(schema, value).map((field) => `undeclared field ${field}`);
}
