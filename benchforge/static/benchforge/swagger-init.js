// Swagger UI for /api/docs/: settings come from data attributes (no inline script under the CSP).
// "Try it out" calls go out with the session cookie; unsafe methods carry the CSRF token.
(function () {
  "use strict";
  const root = document.getElementById("swagger-ui");
  const csrf = root.dataset.csrfToken;
  window.ui = SwaggerUIBundle({
    url: root.dataset.schemaUrl,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    persistAuthorization: false,
    requestInterceptor: function (request) {
      if (request.method && request.method !== "GET" && request.method !== "HEAD") {
        request.headers["X-CSRFToken"] = csrf;
      }
      return request;
    },
  });
})();
