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

/** `mappings/<family>/<eventType>.yaml` */
export const eventMappingFileSchema = z
  .object({
    eventType: eventTypeNameSchema,
    family: familySchema,
    description: z.string(),
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
    /** A record whose own field equals one of these values is at least this severity. */
    failureFields: z
      .array(
        z
          .object({
            field: z.string().min(1),
            equals: z.union([z.string(), z.boolean()]),
            severity: severitySchema,
          })
          .strict(),
      )
      .default([]),
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
