//! The rmcp server handler both transports share: `initialize` (server
//! info and instructions), `tools/list` from [`tools::definitions`] and
//! `tools/call`, which runs the call on a blocking thread through the
//! [`Backend`] and answers with structured JSON (also as text, for clients
//! that read only text). A failed call is a tool-level error whose text the
//! calling model sees; only a malformed request is a protocol error.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::backend::Backend;
use super::tools::{self, Scope};

const INSTRUCTIONS: &str = "Jarvis is the user's personal knowledge base: their Markdown notes (an Obsidian vault, \
including structured records with frontmatter), papers with highlights and summaries, digests and past assistant chats. \
Use `search` first, then `get_document` with a result's `cite` to read more. Cite what you use by its `cite` value \
(a note's vault path or a paper's source). Everything here is read-only.";

/// One MCP server over the knowledge base. Cheap to clone (the HTTP
/// transport builds one per session).
#[derive(Clone)]
pub struct JarvisMcp {
    backend: Arc<Backend>,
    scope: Scope,
}

impl JarvisMcp {
    pub fn new(backend: Arc<Backend>, scope: Scope) -> Self {
        JarvisMcp { backend, scope }
    }

    pub fn backend(&self) -> &Arc<Backend> {
        &self.backend
    }
}

fn rmcp_tools() -> Vec<Tool> {
    tools::definitions()
        .into_iter()
        .map(|d| {
            let schema = match d.input_schema {
                serde_json::Value::Object(m) => m,
                _ => serde_json::Map::new(),
            };
            Tool::new(d.name, d.description, Arc::new(schema))
                .with_title(d.title)
                .with_annotations(ToolAnnotations::with_title(d.title).read_only(true).destructive(false))
        })
        .collect()
}

impl ServerHandler for JarvisMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("jarvis", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(rmcp_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !tools::definitions().iter().any(|d| d.name == name) {
            return Err(ErrorData::invalid_params(
                format!("no tool named `{name}` — the tools are search, get_document, list_documents and kb_stats"),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        let backend = Arc::clone(&self.backend);
        let scope = self.scope;
        let call_name = name.clone();
        let outcome = tokio::task::spawn_blocking(move || backend.call(scope, &call_name, &args))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the {name} call stopped unexpectedly: {e}"), None))?;
        Ok(match outcome {
            Ok(value) => CallToolResult::structured(value),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.message)]),
        }
        .into())
    }
}
