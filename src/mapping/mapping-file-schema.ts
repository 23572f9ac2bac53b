/**
 * zod schemas of the files in `mappings/`.
 *
 * - `mappings/defaults.yaml`: what applies to every event type of a family (the common
 *   attributes the schema pages list once, the semantic-convention moves, severity rules).
 * - `mappings/site/<eventType>.yaml`, `mappings/tenant/<eventType>.yaml`: one file per event
 *   type, holding the catalog (attributes, their types, a one-line English description) and
 *   anything the mapper does differently for that type.
 *
 * Every object is `.strict()`: an unknown key is an error that names the file and the path.
 */
import { z } from 'zod';
import { OCSF_VERSION } from './ocsf.js';

export const attributeTypeSchema = z.enum(['string', 'integer', 'long', 'boolean', 'float']);
export type AttributeType = z.infer<typeof attributeTypeSchema>;

export const familySchema = z.enum(['site', 'tenant']);
export type Family = z.infer<typeof familySchema>;

export const severitySchema = z.enum(['INFO', 'WARN', 'ERROR']);
export type SeverityName = z.infer<typeof severitySchema>;

/** One documented attribute of an event type. */
export const catalogAttributeSchema = z
  .object({
    type: attributeTypeSchema,
    description: z.string(),
    /** Output attribute name when it differs from `tableau.<snake_case>`. */
    rename: z.string().min(1).optional(),
  })
  .strict();
export type CatalogAttribute = z.infer<typeof catalogAttributeSchema>;

export const eventTypeNameSchema = z
  .string()
  .regex(/^[a-z0-9_]+$/, 'event type names are lower-case letters, digits and underscores');

/** What SIEM rules key on: the kind of activity. */
export const categorySchema = z.enum([
  'authentication',
  'permission',
  'user_management',
  'group_management',
  'content',
  'data_access',
  'job',
  'administration',
  'token',
  'other',
]);
export type Category = z.infer<typeof categorySchema>;


/** OCSF classes that fit this data (class_uid). */
export const OCSF_CLASSES = {
  3001: 'Account Change',
  3002: 'Authentication',
  3004: 'Entity Management',
  3005: 'User Access Management',
  3006: 'Group Management',
  6001: 'Web Resources Activity',
  6003: 'API Activity',
} as const;
export type OcsfClassUid = keyof typeof OCSF_CLASSES;

/** The activity_id values of each class in OCSF {@link OCSF_VERSION} (0 Unknown is never mapped). */
export const OCSF_ACTIVITIES: Readonly<Record<OcsfClassUid, Readonly<Record<number, string>>>> = {
  3001: { 1: 'Create', 2: 'Enable', 3: 'Password Change', 4: 'Password Reset', 5: 'Disable', 6: 'Delete', 7: 'Attach Policy', 8: 'Detach Policy', 9: 'Lock', 10: 'MFA Factor Enable', 11: 'MFA Factor Disable', 99: 'Other' },
  3002: { 1: 'Logon', 2: 'Logoff', 3: 'Authentication Ticket', 4: 'Service Ticket Request', 5: 'Service Ticket Renew', 6: 'Preauth', 99: 'Other' },
  3004: { 1: 'Create', 2: 'Read', 3: 'Update', 4: 'Delete', 5: 'Move', 6: 'Enroll', 7: 'Unenroll', 8: 'Enable', 9: 'Disable', 10: 'Activate', 11: 'Deactivate', 12: 'Suspend', 13: 'Resume', 99: 'Other' },
  3005: { 1: 'Assign Privileges', 2: 'Revoke Privileges', 99: 'Other' },
  3006: { 1: 'Assign Privileges', 2: 'Revoke Privileges', 3: 'Add User', 4: 'Remove User', 5: 'Delete', 6: 'Create', 99: 'Other' },
  6001: { 1: 'Create', 2: 'Read', 3: 'Update', 4: 'Delete', 5: 'Search', 6: 'Import', 7: 'Export', 8: 'Share', 99: 'Other' },
  6003: { 1: 'Create', 2: 'Read', 3: 'Update', 4: 'Delete', 99: 'Other' },
};

export const ocsfSchema = z
  .object({
    classUid: z.union([z.literal(3001), z.literal(3002), z.literal(3004), z.literal(3005), z.literal(3006), z.literal(6001), z.literal(6003)]),
    /**
     * The class's activity_id (e.g. Authentication: 1 Logon, 2 Logoff; Entity Management: 1 Create, 2 Read, 3 Update, 4 Delete);
     * with `activityFrom`, the one used when the record's value is missing or not in the map.
     */
    activityId: z.number().int().min(0).max(99),
    /**
     * Where the record says what happened: the value of `attribute` (compared in lower case) picks
     * the activity_id, e.g. `{ attribute: groupOperation, map: { add: 3, delete: 4 } }`.
     */
    activityFrom: z
      .object({
        attribute: z.string().min(1),
        map: z.record(z.string().regex(/^[a-z0-9_ -]+$/, 'a lower-case value (records are compared in lower case)'), z.number().int().min(0).max(99)),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    const known = OCSF_ACTIVITIES[o.classUid];
    const check = (id: number, path: (string | number)[]) => {
      if (known[id] === undefined) {
        ctx.addIssue({ code: 'custom', path, message: `activity_id ${id} is not an activity of OCSF ${OCSF_VERSION} class ${o.classUid} ${OCSF_CLASSES[o.classUid]} (${Object.entries(known).map(([k, v]) => `${k} ${v}`).join(', ')})` });
      }
    };
    check(o.activityId, ['activityId']);
    for (const [value, id] of Object.entries(o.activityFrom?.map ?? {})) check(id, ['activityFrom', 'map', value]);
  });
export type OcsfSpec = z.infer<typeof ocsfSchema>;

/**
 * The object an action was done to, named the same way for every event type
 * (`tableau.target.type`, `tableau.target.id`, `tableau.target.name`, `tableau.target.user.id`,
 * `tableau.target.group.id`), so "everything done to workbook X" is one query. `id`, `name`,
 * `user` and `group` name source attributes of the record (the first present of a `a|b` list).
 */
export const targetSchema = z
  .object({
    type: z.string().regex(/^[a-z_]+$/, 'a lower-case word such as workbook, datasource, view, user, group'),
    id: z.string().min(1).optional(),
    name: z.string().min(1).optional(),
    user: z.string().min(1).optional(),
    group: z.string().min(1).optional(),
  })
  .strict();
export type TargetSpec = z.infer<typeof targetSchema>;

/** The per-type `severity:` key of an event-type file. */
export const typeSeveritySchema = z
  .object({
    default: severitySchema.optional(),
    failure: z.literal('always').optional(),
  })
  .strict();

/** `mappings/<family>/<eventType>.yaml` */
export const eventMappingFileSchema = z
  .object({
    eventType: eventTypeNameSchema,
    family: familySchema,
    description: z.string(),
    category: categorySchema.optional(),
    /** What was done, one lower-case verb or verb phrase: create, delete, update, login, access, download, … */
    action: z.string().regex(/^[a-z_]+$/, 'a lower-case word, underscores allowed').optional(),
    ocsf: ocsfSchema.optional(),
    /**
     * The log record's body: text with `{attribute}` placeholders (source attribute names of
     * the record, `a|b` for the first present, plus `{user}` for the acting user and
     * `{eventType}`); a `[...]` section disappears when a placeholder inside it has no value.
     */
    body: z.string().min(1).optional(),
    /**
     * The body of a record that reports a failure (see `severity.failureFields` in defaults.yaml),
     * with the same placeholders plus `{errorType}` (the record's `error.type`; absent when it is
     * `_OTHER`). Without it a failed record's body is `body` followed by ` (failed[: <error.type>])`.
     */
    bodyOnFailure: z.string().min(1).optional(),
    /** Severity of this type: `default` when the record reports no failure (or one of lower severity); `failure: always` when every record of the type is a failure. */
    severity: typeSeveritySchema.optional(),
    target: targetSchema.optional(),
    /**
     * Per-type semantic-convention moves, over the family's (`defaults.yaml`): documented attribute →
     * a semantic-convention name (`username: user.name`), or `keep` to opt out of the family's move
     * (the attribute stays `tableau.<snake_case>`). Checked at load (catalog.ts).
     */
    semantics: z.record(z.string(), z.string().min(1)).optional(),
    /** Attributes specific to this event type, in the order the schema page lists them. */
    attributes: z.record(z.string(), catalogAttributeSchema).default({}),
  })
  .strict();
export type EventMappingFile = z.infer<typeof eventMappingFileSchema>;

/** `mappings/defaults.yaml` */
export const familyDefaultsSchema = z
  .object({
    /** The common attributes every event type of the family carries. */
    commonAttributes: z.record(z.string(), catalogAttributeSchema),
    /** Source attribute → semantic-convention attribute (the value is moved, not copied). */
    semanticConventions: z.record(z.string(), z.string().min(1)),
    /** Name of the OTel resource `service.name` for events of this family. */
    serviceName: z.string().min(1),
  })
  .strict();

export const severityRulesSchema = z
  .object({
    /** eventOutcome value → severity; an outcome not listed (or null) is INFO. */
    outcomes: z.record(z.string(), severitySchema),
    /**
     * A record whose own field says it failed (equals the value, any case for strings; is one of
     * `oneOf`, any case; or, with `present: true`, is set to a non-empty value) is a failure of at
     * least this severity.
     */
    failureFields: z
      .array(
        z
          .object({
            field: z.string().min(1),
            equals: z.union([z.string(), z.boolean()]).optional(),
            oneOf: z.array(z.string().min(1)).min(1).optional(),
            present: z.literal(true).optional(),
            severity: severitySchema,
          })
          .strict()
          .refine((r) => [r.equals, r.oneOf, r.present].filter((x) => x !== undefined).length === 1, { message: 'give exactly one of equals, oneOf, present' }),
      )
      .default([]),
    /**
     * Fields whose value becomes `error.type` of a failed record that has no failed
     * `eventOutcome`, when it is a short code (letters, digits, `_.:-`, at most 64); else `_OTHER`.
     */
    errorTypeFields: z.array(z.string().min(1)).default([]),
  })
  .strict();

export const defaultsFileSchema = z
  .object({
    /** Prefix of every attribute that keeps its Tableau name. */
    attributePrefix: z.string().min(1),
    /** Prefix of the OTel event name: `<prefix><eventType>`. */
    eventNamePrefix: z.string(),
    site: familyDefaultsSchema,
    tenant: familyDefaultsSchema,
    severity: severityRulesSchema,
  })
  .strict();
export type DefaultsFile = z.infer<typeof defaultsFileSchema>;
