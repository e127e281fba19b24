/** The parts of the OpenAPI document (`/docs-json`) the document test and the fuzz suite read. */
export type OpenApiSchema = {
  type?: string;
  $ref?: string;
  properties?: Record<string, OpenApiSchema>;
  required?: string[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  example?: unknown;
  items?: OpenApiSchema;
  allOf?: OpenApiSchema[];
  additionalProperties?: unknown;
};

/** A path, query or header parameter as the document declares it. */
export interface OpenApiParameter {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header';
  readonly required?: boolean;
  readonly schema: OpenApiSchema;
}
