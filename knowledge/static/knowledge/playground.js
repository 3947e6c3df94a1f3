"use strict";
// Hides the identities, connectors and environments of other tenants than the chosen one.
// The server checks the same on submit; without this script the page works the same, with longer lists.
(() => {
  const tenant = document.getElementById("id_tenant");
  if (!tenant) return;
  const apply = () => {
    for (const option of document.querySelectorAll(".kb-form option[data-tenant]")) {
      const other = option.dataset.tenant !== tenant.value;
      option.hidden = other;
      if (other && option.selected) option.selected = false;
    }
  };
  tenant.addEventListener("change", apply);
  apply();
})();
