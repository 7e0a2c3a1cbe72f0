// Interactive API documentation from the app's own OpenAPI schema, with Swagger UI served locally.

const root = document.getElementById("swagger-ui");
window.SwaggerUIBundle({
  url: root.dataset.openapiUrl,
  domNode: root,
  deepLinking: true,
  tryItOutEnabled: true,
});
