// The environment variable that carries an invoke's scope.session from asAgent to the child (read by serveAgent).
export const SESSION_ENV = 'SUBVISOR_AGENT_SESSION';
