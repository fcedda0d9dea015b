/// The JSON documents of this folder, compiled into the binary by SwiftPM
/// (`.embedInCode` in Package.swift), so that `rpc.discover` and
/// `nextpage schema` serve exactly these files and an installed binary
/// needs nothing beside it.
public enum EmbeddedSchemas {
    /// `Schemas/openrpc.json`: the methods, their params, results and errors.
    public static var openrpc: String { String(decoding: PackageResources.openrpc_json, as: UTF8.self) }
    /// `Schemas/config.schema.json`: a config file, and `define`'s params.
    public static var config: String { String(decoding: PackageResources.config_schema_json, as: UTF8.self) }
    /// `Schemas/transcript.schema.json`: every record of a transcript.
    public static var transcript: String { String(decoding: PackageResources.transcript_schema_json, as: UTF8.self) }
}
