// GraphQL Code Generator's client preset: the typed documents of src/documents.ts, from the
// repository's schema.graphql, into src/gql/ (committed; a test regenerates them into a
// temporary directory and fails when they differ). CASEWORK_CODEGEN_OUT moves the output.
import type { CodegenConfig } from "@graphql-codegen/cli";

const out = process.env.CASEWORK_CODEGEN_OUT ?? "src/gql/";

const config: CodegenConfig = {
  schema: "../../schema.graphql",
  documents: ["src/documents.ts"],
  ignoreNoDocuments: false,
  generates: {
    [out]: {
      preset: "client",
      presetConfig: { fragmentMasking: false },
      config: {
        // Documents as strings: sent as they are, no GraphQL printer at run time.
        documentMode: "string",
        // ESM under Node: relative imports carry their extension.
        emitLegacyCommonJSImports: false,
        useTypeImports: true,
        enumsAsTypes: true,
        strictScalars: true,
        scalars: { DateTime: "string", JSON: "unknown", ID: "string" },
      },
    },
  },
};

export default config;
