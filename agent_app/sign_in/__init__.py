"""Sign-in (Streamlit's own ``st.login``/``st.user``/``st.logout``, OpenID Connect through Authlib) and what it
needs beside Streamlit: who a cookie's sign-in is (:mod:`.identity`), personal API tokens for the route
(:mod:`.api_tokens`) and the player's signed media URLs (:mod:`.media_links`). See docs/deploy.md."""
