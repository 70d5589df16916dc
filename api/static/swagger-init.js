// Starts Swagger UI on /docs/swagger (api/headers.py SWAGGER_HTML): a script file, so the page's CSP needs no
// inline script. The spec's URL comes from the page; the validator badge is off (it would load an image from
// validator.swagger.io, which the CSP forbids and which would send our spec's URL elsewhere).
"use strict";
window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: new URL(root.dataset.specUrl, window.location.href).href,
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null,
  });
});
