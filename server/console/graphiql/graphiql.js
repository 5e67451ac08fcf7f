// GraphiQL for `casework serve --dev`: Strawberry's page, minus the CDN and the URL state.
//
// The token goes in the Headers tab: {"Authorization": "Bearer cw_…"}. GraphiQL sends those
// headers with every query and mutation, and as the connection_init payload of its
// websocket, which is where Casework reads a subscription's token. Editor state (headers
// included) is kept in sessionStorage, so a token is gone when the tab closes, and the
// query is never copied into the address bar, where it would reach history and logs.
"use strict";

(function () {
  const EXAMPLE_QUERY = `# Casework GraphiQL
#
# Put your token in the Headers tab below:
#   {"Authorization": "Bearer cw_…"}
#
# Run with Ctrl-Enter. Subscriptions run over this page's websocket.
{
  me { user role queues }
  queues { name stats { pending leased oldestPendingAgeSeconds } }
}
`;

  const endpoint = new URL("/graphql", window.location.href);
  const subscriptionUrl = new URL(endpoint);
  subscriptionUrl.protocol = endpoint.protocol === "https:" ? "wss:" : "ws:";

  const fetcher = GraphiQL.createFetcher({
    url: endpoint.toString(),
    subscriptionUrl: subscriptionUrl.toString(),
  });

  function CaseworkGraphiQL() {
    return React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: EXAMPLE_QUERY,
      defaultHeaders: '{\n  "Authorization": "Bearer "\n}',
      defaultEditorToolsVisibility: "headers",
      plugins: [GraphiQLPluginExplorer.explorerPlugin()],
      inputValueDeprecation: true,
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: true,
      storage: window.sessionStorage,
    });
  }

  ReactDOM.createRoot(document.getElementById("graphiql")).render(
    React.createElement(CaseworkGraphiQL),
  );
})();
